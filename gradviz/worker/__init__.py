"""The worker: the only process in which user code, torch and CUDA run (``python -m gradviz.worker``).

``supervisor`` is the long-lived worker process, ``run`` the fresh process started for each
request (forked or spawned: ``start_method``, ``spawned``), ``handlers`` what each request does, ``client`` the synchronous client used by the CLI
and the Python API.
"""
