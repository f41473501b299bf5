"""The spec's models: every resource round-trips through JSON, decimals stay exact."""

from datetime import date, datetime
from decimal import Decimal

import msgspec
import pytest
from pydantic import ValidationError

from pipeline.pos_api import models as m
from pipeline.pos_api.answers import decode_json
from pos_sandbox import world
from pos_sandbox.receipts import SandboxData, service_day

ENCODER = msgspec.json.Encoder(decimal_format="number")


def roundtrip(model):
    wire = ENCODER.encode(model.model_dump(mode="python", by_alias=True))
    return type(model).model_validate(decode_json(wire))


def sample_resources():
    receipts = service_day(1001, date(2026, 11, 20), SandboxData())
    products, categories = world.catalog(1002)
    hours = m.Hours(days=m.weekday_mask(*list(m.Weekday)[:5]), start_time="11:30",
                    end_time="14:00", exclude=False, start_date=date(2026, 1, 1))
    value = m.MenuEntryFeatureValue(name="Pommes", price_adjustment=Decimal("1.50"),
                                    min_amount=Decimal(0), max_amount=Decimal(2))
    feature = m.MenuEntryFeature(name="Beilage", group_name="Beilagen", is_deselect_feature=False,
                                 max_values_allowed=1, min_values_required=0, values=[value])
    entry = m.MenuEntry(menu_entry_id=17, name="Schnitzel", badge=m.Badge.BESTSELLER,
                        price=Decimal("26.90"), features=[feature])
    menu = m.Menu(name="Mittag", categories=[m.MenuCategory(
        name="Hauptspeisen", menu_entries=[entry], orderable_hours=[hours])],
        orderable_hours=[hours], price_name="Standard")
    order = m.OrderRequest(
        guid="g-1", location_id=1001, user_info=m.UserInfo(email="gast@example.com"),
        takeaway=False, entries=[m.OrderEntry(product_nr="1021", quantity=Decimal(2),
                                              addons=[m.OrderAddon(product_nr="1100",
                                                                   quantity=Decimal(1))])],
        tip=Decimal("2.00"), grand_total=Decimal("55.80"),
        delivery_info=m.DeliveryInfo(city="Wien", zip="1010"))
    voucher = m.Voucher(id="6f1c0000-0000-4000-8000-000000000001", voucher_code="XMAS-25",
                        gift=m.Gift(amount=5000, balance=1250, max_amount=10000), enabled=True,
                        category_id=3, created_at=datetime(2026, 11, 1, 10, 0),
                        discriminator="GiftVoucherDto")
    return [
        *receipts[:40],
        products[0].product, categories[0], *world.spots(1002)[-6:],
        menu, order, voucher,
        m.ValidityResponse(voucher=voucher, errors=[], is_valid=True),
        m.IssueRequest(category_id=3, voucher_code="A-1", gift=m.GiftRequest(amount=2500),
                       client_type="pos-etl"),
        m.RedemptionRequest(redemption=m.RedemptionAmount(amount=500), client_type="pos-etl"),
        m.TopUpRequest(amount=700, client_type="pos-etl"),
        m.RedemptionResult(redemption=m.RedemptionAmount(amount=500), success=True,
                           transaction_id=42, voucher=voucher),
        m.TopUpResult(new_amount=1950, success=True, transaction_id=43, voucher=voucher),
        m.Paged[m.Spot](page=m.PageInfo(offset=0, limit=50, total=1),
                        data=[world.spots(1001)[0]]),
        m.DataEnvelope[m.Voucher](data=voucher),
    ]


@pytest.mark.parametrize("resource", sample_resources(), ids=lambda r: type(r).__name__)
def test_every_resource_round_trips_through_json(resource):
    assert roundtrip(resource) == resource


def test_decimals_stay_exact_through_the_wire():
    body = ENCODER.encode({"amount": Decimal("0.1") + Decimal("0.2"), "big": Decimal(
        "123456789012.3456")})
    assert body == b'{"amount":0.3,"big":123456789012.3456}'  # JSON numbers, not strings
    decoded = decode_json(body)
    assert decoded == {"amount": Decimal("0.3"), "big": Decimal("123456789012.3456")}
    assert all(isinstance(v, Decimal) for v in decoded.values())


def test_receipt_timestamps_accept_both_forms_and_serve_the_pos_form():
    r = service_day(1001, date(2026, 11, 20), SandboxData())[3]
    wire = r.model_dump(mode="python", by_alias=True)
    assert wire["dateTime"] == r.date_time.strftime("%d.%m.%Y %H:%M:%S")
    wire["dateTime"] = r.date_time.isoformat()
    assert m.Receipt.model_validate(wire).date_time == r.date_time
    wire["dateTime"] = "31.02.2026 10:00:00"
    with pytest.raises(ValidationError, match="dateTime"):
        m.Receipt.model_validate(wire)


def test_unknown_fields_are_tolerated_and_nullable_fields_accept_null():
    r = service_day(1003, date(2026, 11, 20), SandboxData())
    settled = next(x for x in r if x.transaction_type == "Abrechnen")
    wire = settled.model_dump(mode="python", by_alias=True)
    wire["brandNewField"] = {"x": 1}
    parsed = m.Receipt.model_validate(wire)
    assert parsed.customer is None
    assert all(i.unique_id is None and i.side_dishes is None for i in parsed.items)
    assert parsed.model_extra == {"brandNewField": {"x": 1}}


def test_payment_type_key_is_nr_and_weekday_mask_matches_the_spec():
    pt = m.PaymentType.model_validate({"id": 1, "nr": 7, "name": "Bar"})
    assert pt.nr == 7 and pt.model_dump(by_alias=True)["nr"] == 7
    weekdays = [m.Weekday.MONDAY, m.Weekday.TUESDAY, m.Weekday.WEDNESDAY,
                m.Weekday.THURSDAY, m.Weekday.FRIDAY]
    assert m.weekday_mask(*weekdays) == 62
    assert m.weekdays_in_mask(62) == weekdays
