"""The ``gradviz`` command: ``main`` parses the command line and runs one subcommand.

Each subcommand validates what it is given here, in the CLI's process, and sends the user-sized
work to a worker (``request.WorkerSession``); what it prints and its exit status are the CLI's
contract (``contract``). Nothing is imported here, so that ``gradviz.cli.contract`` stays cheap.
"""
