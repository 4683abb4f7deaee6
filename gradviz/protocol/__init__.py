"""The one worker protocol: messages, line framing, launch environment and fault reports.

Standard library only. The worker (``gradviz.worker``), its synchronous client (CLI, Python API)
and its Qt client (the window) are thin ends over these modules, so a new message or a new
guard is written once (the way spyder-kernels' clients share one ``CommBase``).
"""
