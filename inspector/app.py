"""`cloudbrain ui`: the offline web inspector. Server-rendered pages (FastAPI + Jinja2, every asset served from the
package, no CDN), a little plain JavaScript, the maps drawn by `drawing/`.

Everything shown comes from outside (instructions, ids, state), so every page is autoescaped and the maps escape
their own text; a bad thread, checkpoint or run id is a 404 page that says which, never a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from drawing import Route, altitude_svg, map_svg, route_colour
from graph.history import UnknownRunError, node_reads
from graph.runner import new_thread_id
from graph.session import EditError, Session
from graph.settings import RunSettings, settings_error
from inspector import data
from tools.world import World

HERE = Path(__file__).resolve().parent
STATUSES = ("execute", "human_confirm", "safe_refusal", data.WAITING)
# What a stored thread runs with of the inspector's own settings: the server its API key goes to (never one a stored
# thread names), the key, and the safety memory; the rest is the thread's own (RunSettings.from_stored).
OWN_SETTINGS = ("base_url", "api_key", "memory_path", "memory_url")


class NotFound(LookupError):
    """A page asked for something that is not there (a thread, checkpoint, run, results folder)."""


LOCAL_HOSTS = ["127.0.0.1", "localhost", "::1"]


def _path(value: str) -> str:
    """An id as one URL path segment ('/' and every other reserved character escaped)."""
    return quote(value, safe="")


def create_app(
    saver: BaseCheckpointSaver,
    *,
    settings: RunSettings,
    world: World | None = None,
    results: Path | None = None,
    store_name: str = "",
    allowed_hosts: list[str] | None = None,
) -> FastAPI:
    """The inspector over one checkpoint store; `settings`: what a new stepped run runs with (the model its form
    names over them), and what a fork or step of a stored thread takes of them (OWN_SETTINGS); `world` is what a
    new stepped run flies over;
    `allowed_hosts`: the Host names it answers (this machine's only by default, so no other site's page can reach it
    through DNS rebinding)."""
    app = FastAPI(title="CloudBrain inspector", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or LOCAL_HOSTS)

    @app.middleware("http")
    async def same_origin_posts(request: Request, call_next: Callable[[Request], Any]) -> Any:
        """A POST runs the model and writes to the store: only a page of this inspector may send one."""
        origin = request.headers.get("origin") or request.headers.get("referer")
        if request.method == "POST" and origin and urlsplit(origin).netloc != request.headers.get("host"):
            return PlainTextResponse("cross-site request refused", status_code=403)
        return await call_next(request)

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals.update(store_name=store_name, has_results=results is not None)
    templates.env.filters["path"] = _path

    def page(request: Request, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, values, status_code=status_code)

    @app.exception_handler(UnknownRunError)
    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: Exception) -> HTMLResponse:
        return page(request, "error.html", 404, title="Not here", message=str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse:
        title = "Not here" if exc.status_code == 404 else "Refused"
        return page(request, "error.html", exc.status_code, title=title, message=f"{request.url.path}: {exc.detail}")

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> HTMLResponse:
        return page(request, "error.html", 500, title="Something broke", message=f"{type(exc).__name__}: {exc}")

    @app.get("/", response_class=HTMLResponse)
    def threads(request: Request, status: str = "") -> HTMLResponse:
        rows = data.list_threads(saver, status=status or None)
        return page(request, "threads.html", rows=rows, status=status, statuses=STATUSES)

    @app.get("/thread/{thread_id}", response_class=HTMLResponse)
    def thread(request: Request, thread_id: str, checkpoint: str | None = None) -> HTMLResponse:
        return _thread_page(request, thread_id, checkpoint)

    @app.post("/thread/{thread_id}/recheck", response_class=HTMLResponse)
    def recheck(request: Request, thread_id: str) -> HTMLResponse:
        return _thread_page(request, thread_id, None, recheck=True)

    def _thread_page(request: Request, thread_id: str, checkpoint: str | None, recheck: bool = False) -> HTMLResponse:
        started = time.perf_counter()
        view = data.thread_view(saver, thread_id, checkpoint)
        planned = [r for r in view.rounds if r.route]
        routes = [r.route for r in planned] + ([view.final_route] if view.final_route else [])
        routes += [m.route for m in view.members]  # a fleet mission: every member, on the one mission clock
        markers = [r.marker for r in view.rounds if r.marker]
        world_model = data.parse_world(view.world)
        first_member = len(routes) - len(view.members)
        return page(
            request,
            "thread.html",
            view=view,
            colours={r.round: route_colour(i) for i, r in enumerate(planned)},  # the map's colour of each round
            member_colours=[route_colour(first_member + j) for j in range(len(view.members))],
            map=map_svg(world_model, routes, markers),
            profile=altitude_svg(routes, markers, floor_m=view.altitude_band[0], ceiling_m=view.altitude_band[1]),
            recheck=data.recheck(view) if recheck else None,
            render_ms=round(1000 * (time.perf_counter() - started), 1),
        )

    @app.get("/thread/{thread_id}/checkpoints", response_class=HTMLResponse)
    def checkpoint_list(request: Request, thread_id: str) -> HTMLResponse:
        return page(request, "checkpoints.html", thread_id=thread_id, rows=data.thread_checkpoints(saver, thread_id))

    def _checkpoint_page(
        request: Request, thread_id: str, checkpoint_id: str, error: str = "", status_code: int = 200
    ) -> HTMLResponse:
        state = data.checkpoint_state(saver, thread_id, checkpoint_id)
        shown = {key: value for key, value in state.items() if key != "world"}
        values = {"thread_id": thread_id, "checkpoint_id": checkpoint_id, "state": data.dumps(shown), "error": error}
        return page(request, "checkpoint.html", status_code, **values)

    @app.get("/thread/{thread_id}/checkpoint/{checkpoint_id}", response_class=HTMLResponse)
    def checkpoint(request: Request, thread_id: str, checkpoint_id: str) -> HTMLResponse:
        return _checkpoint_page(request, thread_id, checkpoint_id)

    @app.post("/thread/{thread_id}/checkpoint/{checkpoint_id}/fork")
    def fork(request: Request, thread_id: str, checkpoint_id: str, edits: str = Form("")) -> Any:
        """A new thread from the checkpoint's state with the edits (PATH=VALUE, one a line), run to its end."""
        session = _session(thread_id)
        try:
            new_thread = session.fork(thread_id, checkpoint_id, data.parse_edits(edits), into=new_thread_id())
        except EditError as exc:
            return _checkpoint_page(request, thread_id, checkpoint_id, f"cannot fork: {exc}", 400)
        return RedirectResponse(f"/thread/{_path(new_thread)}", status_code=303)

    # --- stepping ---------------------------------------------------------------------------------------------
    @app.get("/step", response_class=HTMLResponse)
    def step_form(request: Request) -> HTMLResponse:
        return page(request, "step_form.html", has_world=world is not None)

    def _session(thread_id: str) -> Session:
        """A stored thread's session: its own settings, with the inspector's OWN_SETTINGS over them."""
        try:
            return Session.of_thread(saver, thread_id, **{key: getattr(settings, key) for key in OWN_SETTINGS})
        except ValidationError as exc:  # e.g. a model this version does not know
            raise StarletteHTTPException(
                400, f"thread {thread_id!r} has stored settings this version cannot run: {settings_error(exc)}"
            ) from None

    @app.post("/step")
    def step_start(instruction: str = Form(...), model: str = Form("")) -> RedirectResponse:
        if world is None:
            raise NotFound("this inspector was started without --world: nothing to fly over")
        try:
            chosen = RunSettings.model_validate(dict(settings) | ({"model": model} if model else {}))
        except ValidationError as exc:
            raise StarletteHTTPException(400, settings_error(exc)) from None
        thread_id = f"step-{new_thread_id()}"
        Session(saver, chosen.to_context()).start(world, instruction, thread_id=thread_id, stepping=True)
        return RedirectResponse(f"/step/{_path(thread_id)}", status_code=303)

    @app.get("/step/{thread_id}", response_class=HTMLResponse)
    def step_page(request: Request, thread_id: str, error: str = "") -> HTMLResponse:
        snapshot = _session(thread_id).state(thread_id)
        values = snapshot.values
        node = snapshot.next[0] if snapshot.next else None
        reads = {key: data.dumps(values.get(key)) for key in node_reads(node) if key != "world"} if node else {}
        routes = [
            Route(label=f"round {a.get('round', i)}", waypoints=w, uav_id=None)
            for i, a in enumerate(values.get("attempts") or [])
            if (w := data.planned_waypoints(a.get("tool_results") or []))
        ]
        candidate = values.get("candidate") or {}
        if candidate.get("waypoints"):
            routes.append(Route(label="current plan", waypoints=candidate["waypoints"], style="dashed"))
        drawn = map_svg(data.parse_world(values["world"]), routes)
        return page(
            request,
            "step.html",
            thread_id=thread_id,
            node=node,
            reads=reads,
            map=drawn,
            status=values.get("status"),
            instruction=values.get("instruction", ""),
            error=error,
        )

    @app.post("/step/{thread_id}/{action}")
    def step_action(thread_id: str, action: str, edit: str = Form("")) -> RedirectResponse:
        session = _session(thread_id)
        if action == "next":
            session.step(thread_id)
        elif action == "continue":
            session.replay(thread_id)
        elif action == "edit":
            try:
                edits = data.parse_edits(edit)
                if not edits:
                    raise EditError("an edit is PATH=VALUE")
                session.edit(thread_id, edits)  # the pending step stays the same
            except EditError as exc:
                query = urlencode({"error": f"cannot edit: {exc}"})
                return RedirectResponse(f"/step/{_path(thread_id)}?{query}", status_code=303)
        else:
            raise NotFound(f"no step action {action!r} (next, continue or edit)")
        return RedirectResponse(f"/step/{_path(thread_id)}", status_code=303)

    # --- bench results ----------------------------------------------------------------------------------------
    def _results() -> Path:
        if results is None:
            raise NotFound("this inspector was started without --results: no bench run to show")
        return results

    @app.get("/bench", response_class=HTMLResponse)
    def bench(request: Request) -> HTMLResponse:
        filters = {key: request.query_params.get(key, "") for key in data.BENCH_FILTERS}
        rows = data.bench_rows(_results(), filters)
        return page(request, "bench.html", rows=rows, filters=filters, results=str(results))

    @app.get("/bench/run/{key:path}", response_class=HTMLResponse)
    def bench_run(request: Request, key: str) -> HTMLResponse:
        view = data.bench_run(_results(), key)
        drawn = map_svg(data.parse_world(view.world), [*view.routes, *view.gold_routes])
        return page(request, "bench_run.html", view=view, map=drawn)

    return app
