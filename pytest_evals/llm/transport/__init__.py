"""What sends a request: one attempt each, retries and limits left to the client.

http_transport.py: the ``aiohttp`` path and the ``openai`` SDK path, in this process;
process_transport.py: the ``process`` path, aiohttp in a helper process, over the pipe
format of pipe_frames.py; helper_cache.py: the response cache's writes that the helper
applies for this process (the process transport's ``cache_ops``).
"""
