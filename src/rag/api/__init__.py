"""HTTP API: `create_app(settings)` puts the pipeline behind FastAPI; `serve()` runs it with uvicorn.

    app.py         routes, error handlers, middleware stack, OpenAPI
    middleware.py  security headers, trace ids and the access log, HEAD, API keys, body size (pure ASGI)
    responses.py   JSON and error responses (the JSON shapes themselves are rag.serialize)
    stream.py      SSE: keep-alives, cancellation when the client leaves
    server.py      uvicorn (`rag serve`), one app per worker process, request deadline, connection cap

Chunk ids contain `#`, which clients must send URL-encoded as `%23` (`/chunks/doc-010%23c02`);
every citation carries that link ready-made. Answers are serialised with `orjson` from the
domain dataclasses; the pydantic models in `rag.api.schemas` describe them for OpenAPI.
"""

from rag.api.app import QAService, create_app
from rag.api.server import app_factory, configure_logging, serve

__all__ = ["QAService", "app_factory", "configure_logging", "create_app", "serve"]
