"""The floor for `bench_http`: a bare FastAPI `POST /ask` served exactly as `rag serve` serves.

Same uvicorn settings and connection protocol (`BoundedH11Protocol`), same request model
(`AskRequest`), a fixed JSON body the size of a typical answer (3.5 KB); no middleware, no
pipeline. Under the same load its latency spread is what the server, the event loop and the shared
machine add by themselves.

Usage: python -m benchmarks.bare_app PORT
"""

from __future__ import annotations

import functools
import sys

import orjson
import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response

from rag.api.schemas import AskRequest
from rag.api.server import BoundedH11Protocol, Limits

ANSWER_BYTES = 3500


def bare_app() -> FastAPI:
    app = FastAPI()
    filler = "x" * ANSWER_BYTES

    @app.post("/ask")
    async def ask(body: AskRequest) -> Response:
        return Response(
            orjson.dumps({"question": body.question, "text": filler}), media_type="application/json"
        )

    @app.get("/readyz")
    async def readyz() -> Response:
        return Response(b'{"status":"ready"}', media_type="application/json")

    return app


def main(port: int) -> None:
    limits = Limits()
    protocol = functools.partial(
        BoundedH11Protocol, request_timeout=limits.request_timeout, max_connections=limits.max_connections
    )
    uvicorn.run(
        bare_app(),
        host="127.0.0.1",
        port=port,
        access_log=False,
        log_level="warning",
        http=protocol,
        timeout_keep_alive=limits.keep_alive,
    )


if __name__ == "__main__":
    main(int(sys.argv[1]))
