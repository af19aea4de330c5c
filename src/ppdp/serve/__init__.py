"""``ppdp serve``: count queries answered over HTTP from the releases of a directory.

``POST /releases/{name}/count`` with ``{"query": "..."}`` answers with the JSON that ``ppdp
count RELEASE QUERY --json`` prints (the answer's ``to_dict()``, made strict JSON by
`ppdp.jsonable.json_ready`), that is `ppdp.release.base.Release.count`'s answer; ``/counts``
answers a batch, ``GET /releases`` lists the releases with their public parameters and
guarantees, ``/openapi.json`` describes the API. Releases are loaded on first use, verified,
kept, and loaded again when replaced on disk (`catalog`); the server only reads.

FastAPI, on Starlette, served by uvicorn. Starlette alone would serve these few endpoints,
but the OpenAPI document and the validation of request bodies (a query is a non-empty string
of at most so many characters, a batch a list of at most so many) would be written and kept in
step by hand; FastAPI derives both from the same declarations, and its errors are turned into
this server's one-line answers (`errors`). The cost is pydantic, which FastAPI brings.

Modules: `config` (settings and their checks), `catalog` (releases by name), `summary` (what
is said of a release), `guard` (Host, origin, token, body size), `errors` (answers of
failures), `releases` (the endpoints), `app` (`create_app`),
`run` (uvicorn)."""

from ppdp.serve.app import create_app
from ppdp.serve.config import Limits, ServeConfig
from ppdp.serve.run import run

__all__ = ["Limits", "ServeConfig", "create_app", "run"]
