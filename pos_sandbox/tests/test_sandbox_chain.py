"""A sandbox of a chain (``--locations N``): every location served with its own key, none more."""

from datetime import date

import httpx
import pytest

from pos_sandbox import world
from pos_sandbox.app import SandboxConfig
from pos_sandbox.server import banner, running_sandbox

CHAIN = 25


@pytest.fixture(scope="module")
def chain_url():
    with running_sandbox(SandboxConfig(locations=CHAIN)) as url:
        yield url


def test_a_chain_is_deterministic_and_its_short_codes_unique():
    chain = world.chain(300)
    assert chain.locations[:3] == world.FIXED_LOCATIONS
    assert [loc.id for loc in chain.locations] == list(range(1001, 1301))
    assert len({loc.short_code for loc in chain.locations}) == 300
    assert world.chain(300).locations == chain.locations  # a pure function of N
    kinds = {loc.kind for loc in chain.locations}
    assert kinds == {"hotel", "restaurant"}
    assert any(loc.older_configuration for loc in chain.locations[3:])


def test_every_location_of_the_chain_is_served_with_its_key(chain_url):
    last = world.chain(CHAIN).locations[-1]
    key = {"x-api-key": last.api_key}
    day = date(2026, 6, 1)
    receipts = httpx.post(f"{chain_url}/api/v1/locations/{last.id}/reports/receipts",
                          json={"after": f"{day}T00:00:00", "before": f"{day}T23:59:59"},
                          headers=key, timeout=30)
    assert receipts.status_code == 200
    assert receipts.json() and {r["location"]["id"] for r in receipts.json()} == {str(last.id)}
    spots = httpx.get(f"{chain_url}/api/v1/external/spot",
                      params={"filter['locationShortCode']": last.short_code}, headers=key)
    assert spots.status_code == 200
    assert {s["location"]["locationId"] for s in spots.json()["data"]} == {last.id}
    menus = httpx.get(f"{chain_url}/api/v1/locations/{last.id}/menus")
    assert menus.status_code == 200 and menus.json()


def test_locations_beyond_the_chain_do_not_exist(chain_url):
    outside = world.location(1001 + CHAIN)
    assert outside is not None  # a location of a larger chain, not of this one
    key = {"x-api-key": outside.api_key}
    assert httpx.post(f"{chain_url}/api/v1/reports/receipts", headers=key,
                      json={"after": "2026-06-01T00:00:00",
                            "before": "2026-06-02T00:00:00"}).status_code == 401
    first_key = {"x-api-key": "sandbox-key-1001"}
    assert httpx.get(f"{chain_url}/api/v1/external/product",
                     params={"filter['locationId']": outside.id},
                     headers=first_key).status_code == 400
    assert httpx.get(f"{chain_url}/api/v1/locations/{outside.id}/menus").status_code == 404


def test_the_banner_of_a_large_chain_counts_what_it_does_not_list():
    text = banner("http://127.0.0.1:8765", world.chain(200))
    assert "200 locations" in text
    assert "and 190 more, up to 1200" in text
    assert "VIE01" in text and "WLS20" not in text


@pytest.mark.parametrize("count", [0, world.MAX_LOCATIONS + 1])
def test_a_chain_has_one_to_max_locations(count):
    with pytest.raises(ValueError, match="1 to 9000 locations"):
        world.chain(count)
