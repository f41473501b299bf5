"""Routes of the menu (4.2), external order (4.3) and voucher ledger (4.5) areas."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pos_sandbox.menu import MenuError, MenuStore
from pos_sandbox.orders import OrderDesk, OrderRejected
from pos_sandbox.vouchers import VoucherError, VoucherLedger

VOUCHERS = "/voucherservice/api/v1/vouchers"


def extra_routes(menus: MenuStore, desk: OrderDesk, ledger: VoucherLedger, *,
                 json_response, error, key_location, unauthorized) -> list[Route]:
    """Every route of the three areas, sharing the app's JSON and auth helpers."""

    async def body_of(request: Request):
        raw = await request.body()
        try:
            return json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            raise MenuError(400, "the body is not valid JSON") from None

    def guarded(handler: Callable[..., Awaitable[Response]]):
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except unauthorized as exc:
                return error(exc.status, str(exc))
            except (MenuError, OrderRejected, VoucherError) as exc:
                return error(exc.status, str(exc))
        return endpoint

    def path_int(request: Request, name: str) -> int:
        try:
            return int(request.path_params[name])
        except ValueError:
            raise MenuError(404, f"{name} must be an integer") from None

    # --- menu ----------------------------------------------------------------------------

    async def get_menus(request: Request) -> Response:
        location_id = path_int(request, "locationId")
        if menus.chain.by_id(location_id) is None:
            return error(404, f"no location {location_id}")
        return json_response(menus.menus(location_id))

    def mutation(kind: str, action: str, parent: str | None = None, node: str | None = None,
                 parent_field: str | None = None, status: int = 200):
        async def handler(request: Request) -> Response:
            loc = key_location(request)
            if action == "delete":
                if kind == "category" and not menus.menu_has_category(
                        path_int(request, "menuId"), path_int(request, node), loc.id):
                    return error(404, "the category is not in this menu")
                menus.delete(kind, path_int(request, node), loc.id)
                return Response(status_code=204)
            body = await body_of(request)
            if action == "create":
                if parent == "locationId":
                    if path_int(request, parent) != loc.id:
                        return error(403, "the key is not authorised for this location")
                    parent_id = None
                elif parent:
                    parent_id = path_int(request, parent)
                else:
                    parent_id = body.pop(parent_field, None) if isinstance(body, dict) else None
                return json_response(menus.create(kind, parent_id, loc.id, body), status=201)
            if kind == "category" and not menus.menu_has_category(
                    path_int(request, "menuId"), path_int(request, node), loc.id):
                return error(404, "the category is not in this menu")
            return json_response(menus.update(kind, path_int(request, node), loc.id, body))
        return guarded(handler)

    # --- orders --------------------------------------------------------------------------

    async def place_order(request: Request) -> Response:
        loc = key_location(request)
        status, answer = desk.place(loc, await body_of(request))
        return json_response(answer, status=status)

    # --- vouchers ------------------------------------------------------------------------

    async def list_vouchers(request: Request) -> Response:
        key_location(request)
        return json_response(ledger.list())

    async def validity(request: Request) -> Response:
        key_location(request)
        return json_response(ledger.validity(request.query_params.get("voucherCode")))

    async def issue(request: Request) -> Response:
        key_location(request)
        voucher = ledger.issue(await body_of(request))
        return json_response({"data": voucher}, status=201,
                             headers={"Location": f"{VOUCHERS}/{voucher['id']}"})

    async def redeem(request: Request) -> Response:
        key_location(request)
        return json_response({"data": ledger.redeem(request.path_params["voucherId"],
                                                    await body_of(request))})

    async def top_up(request: Request) -> Response:
        key_location(request)
        return json_response({"data": ledger.top_up(request.path_params["voucherId"],
                                                    await body_of(request))})

    base = "/api/v1/customer"
    return [
        Route("/api/v1/locations/{locationId}/menus", guarded(get_menus), methods=["GET"]),
        Route(f"{base}/locations/{{locationId}}/menu",
              mutation("menu", "create", parent="locationId"), methods=["POST"]),
        Route(f"{base}/menus/{{menuId}}", mutation("menu", "update", node="menuId"),
              methods=["PUT"]),
        Route(f"{base}/menus/{{menuId}}", mutation("menu", "delete", node="menuId"),
              methods=["DELETE"]),
        Route(f"{base}/menus/{{menuId}}/category",
              mutation("category", "create", parent="menuId"), methods=["POST"]),
        Route(f"{base}/menus/{{menuId}}/category/{{id}}",
              mutation("category", "update", node="id"), methods=["PUT"]),
        Route(f"{base}/menus/{{menuId}}/category/{{id}}",
              mutation("category", "delete", node="id"), methods=["DELETE"]),
        Route(f"{base}/categories/{{categoryId}}/menuEntry",
              mutation("entry", "create", parent="categoryId"), methods=["POST"]),
        Route(f"{base}/menuEntries/{{id}}", mutation("entry", "update", node="id"),
              methods=["PUT"]),
        Route(f"{base}/menuEntries/{{id}}", mutation("entry", "delete", node="id"),
              methods=["DELETE"]),
        Route("/api/v1/menuentryfeature",
              mutation("feature", "create", parent_field="menuEntryID"), methods=["POST"]),
        Route("/api/v1/menuentryfeature/{featureId}",
              mutation("feature", "update", node="featureId"), methods=["PUT"]),
        Route("/api/v1/menuentryfeature/{featureId}",
              mutation("feature", "delete", node="featureId"), methods=["DELETE"]),
        Route("/api/v1/menuentryfeaturevalue",
              mutation("value", "create", parent_field="featureId"), methods=["POST"]),
        Route("/api/v1/menuentryfeaturevalue/{featureValueId}",
              mutation("value", "update", node="featureValueId"), methods=["PUT"]),
        Route("/api/v1/menuentryfeaturevalue/{featureValueId}",
              mutation("value", "delete", node="featureValueId"), methods=["DELETE"]),
        Route("/api/v1/external/order", guarded(place_order), methods=["POST"]),
        Route(VOUCHERS, guarded(list_vouchers), methods=["GET"]),
        Route(f"{VOUCHERS}/validity", guarded(validity), methods=["GET"]),
        Route(f"{VOUCHERS}/gifts", guarded(issue), methods=["POST"]),
        Route(f"{VOUCHERS}/{{voucherId}}/redemption", guarded(redeem), methods=["POST"]),
        Route(f"{VOUCHERS}/{{voucherId}}/booking", guarded(top_up), methods=["POST"]),
    ]
