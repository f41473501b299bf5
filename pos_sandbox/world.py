"""Master data of the sandbox: a small Austrian restaurant and hotel group.

Everything here is a pure function of the location, so the catalog, the spots and
the staff are the same on every start and on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from zoneinfo import ZoneInfo

from pipeline.pos_api import models as m
from pos_sandbox import FIRST_ID, MAX_LOCATIONS  # noqa: F401 (the chain's bounds)

HOTEL_DAY_STARTS = "03:00"
"""A sandbox hotel's night audit (Tagesabschluss) runs at 02:30; its business day starts
at 03:00, so the receipts of the night until then belong to the day before."""


@dataclass(frozen=True)
class SandboxLocation:
    id: int
    short_code: str
    name: str
    kind: str  # "restaurant" or "hotel"
    timezone: str = "Europe/Vienna"
    older_configuration: bool = False
    room_nr_spot_nr_offset: int = 0
    closes_after_midnight: int = 1  # last hour (local) of the night's service
    business_day_starts: str = "00:00"
    """When the location's business day starts (local): a hotel's after its night audit."""

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def api_key(self) -> str:
        return api_key(self.id)

    @property
    def primary_cashbox_id(self) -> int:
        return self.id * 10 + 1

    @property
    def bar_cashbox_id(self) -> int:
        return self.id * 10 + 2


KEY_PREFIX = "sandbox-key-"


def api_key(location_id: int) -> str:
    """The sandbox's key of a location (``Chain.by_key`` reads it back)."""
    return f"{KEY_PREFIX}{location_id}"


FIXED_LOCATIONS: tuple[SandboxLocation, ...] = (
    SandboxLocation(1001, "VIE01", "Gasthaus Zum Goldenen Hirschen, Wien", "restaurant"),
    SandboxLocation(
        1002,
        "SZG01",
        "Hotel Mirabellblick, Salzburg",
        "hotel",
        room_nr_spot_nr_offset=5000,
        closes_after_midnight=3,
        business_day_starts=HOTEL_DAY_STARTS,
    ),
    SandboxLocation(
        1003, "GRZ01", "Café Murinsel, Graz", "restaurant", older_configuration=True
    ),
)
"""The three hand-made locations; a larger chain (``--locations N``) adds generated ones."""

# (short code prefix, city) in the order a chain grows; the first three are the fixed ones'.
_CITIES = (("VIE", "Wien"), ("SZG", "Salzburg"), ("GRZ", "Graz"), ("LNZ", "Linz"),
           ("IBK", "Innsbruck"), ("KLU", "Klagenfurt"), ("STP", "St. Pölten"),
           ("BRG", "Bregenz"), ("EIS", "Eisenstadt"), ("WLS", "Wels"))
_RESTAURANTS = ("Gasthaus", "Wirtshaus", "Beisl", "Café", "Brasserie", "Heuriger")


def location(location_id: int) -> SandboxLocation | None:
    """Location ``location_id`` of the largest possible chain: a pure function of the id.

    Index k = id - 1001 lies in city k mod 10, as its (k div 10 + 1)-th location there
    (short code ``LNZ01``, ``VIE02``, ...); every 7th from the second on is a hotel, every
    11th from the third on answers as an older query configuration.
    """
    k = location_id - FIRST_ID
    if not 0 <= k < MAX_LOCATIONS:
        return None
    if k < len(FIXED_LOCATIONS):
        return FIXED_LOCATIONS[k]
    return _generated(k)


@cache
def _generated(k: int) -> SandboxLocation:
    code, city = _CITIES[k % len(_CITIES)]
    number = k // len(_CITIES) + 1
    if k % 7 == 1:
        return SandboxLocation(FIRST_ID + k, f"{code}{number:02d}", f"Hotel {city} {number}",
                               "hotel", room_nr_spot_nr_offset=5000, closes_after_midnight=3,
                               business_day_starts=HOTEL_DAY_STARTS)
    name = f"{_RESTAURANTS[k % len(_RESTAURANTS)]} {city} {number}"
    return SandboxLocation(FIRST_ID + k, f"{code}{number:02d}", name, "restaurant",
                           older_configuration=k % 11 == 2)


@dataclass(frozen=True)
class Chain:
    """The locations one sandbox serves: ids 1001 to 1000 + N."""

    locations: tuple[SandboxLocation, ...]
    _by_id: dict[int, SandboxLocation] = field(compare=False, repr=False)
    _by_code: dict[str, SandboxLocation] = field(compare=False, repr=False)

    def by_id(self, location_id: int) -> SandboxLocation | None:
        return self._by_id.get(location_id)

    def by_short_code(self, short_code: str) -> SandboxLocation | None:
        """Case-insensitive, as the spec's catalog filters are."""
        return self._by_code.get(short_code.strip().upper())

    def by_key(self, api_key: str) -> SandboxLocation | None:
        number = api_key.removeprefix(KEY_PREFIX)
        if not api_key.startswith(KEY_PREFIX) or not number.isdigit():
            return None
        return self.by_id(int(number))


@cache
def chain(count: int = len(FIXED_LOCATIONS)) -> Chain:
    """The first ``count`` locations (default: the three fixed ones)."""
    if not 1 <= count <= MAX_LOCATIONS:
        raise ValueError(f"a sandbox serves 1 to {MAX_LOCATIONS} locations, not {count}")
    locations = tuple(location(FIRST_ID + k) for k in range(count))
    return Chain(locations, {loc.id: loc for loc in locations},
                 {loc.short_code: loc for loc in locations})


LOCATIONS: tuple[SandboxLocation, ...] = chain().locations
"""The default sandbox's locations."""


def location_by_id(location_id: int) -> SandboxLocation | None:
    """The default sandbox's location with this id, if any."""
    return chain().by_id(location_id)


def location_by_short_code(short_code: str) -> SandboxLocation | None:
    """The default sandbox's location with this short code (case-insensitive), if any."""
    return chain().by_short_code(short_code)


# --- catalog -------------------------------------------------------------------------------

VAT_RATES = {1: Decimal("10"), 2: Decimal("13"), 3: Decimal("20"), 4: Decimal("0")}
"""taxRateId -> percent."""
PASS_THROUGH = {"Ortstaxe": 4}
"""Products collected for someone else, at their own tax rate: the tourist tax (Ortstaxe)
a hotel collects for the municipality carries no VAT and is no revenue."""
TOURIST_TAX = "Ortstaxe"
TOURIST_TAX_ACCOUNT = "3640"
"""The account the sandbox's configs book the tourist tax to (owed to the municipality)."""

# (externalId suffix, name, English name, taxRateId, hotel only, products: (name, gross price))
_CATEGORIES: tuple[tuple[str, str, str, int, bool, tuple[tuple[str, str], ...]], ...] = (
    ("VOR", "Vorspeisen", "Starters", 1, False, (
        ("Beef Tatar", "16.90"), ("Vitello Tonnato", "14.50"), ("Gebackene Champignons", "9.80"),
        ("Saure Wurst", "8.90"), ("Liptauerbrot", "6.50"), ("Räucherforelle", "13.90"),
        ("Blattsalat mit Kernöl", "5.90"), ("Erdäpfelsalat", "5.50"), ("Kaspressknödel", "7.90"),
        ("Steirischer Backhendlsalat", "15.90"),
    )),
    ("SUP", "Suppen", "Soups", 1, False, (
        ("Rindsuppe mit Frittaten", "5.90"), ("Leberknödelsuppe", "6.20"),
        ("Grießnockerlsuppe", "5.90"), ("Gulaschsuppe", "6.90"), ("Kürbiscremesuppe", "6.50"),
        ("Knoblauchcremesuppe", "6.50"), ("Tagessuppe", "4.90"), ("Bärlauchsuppe", "6.50"),
    )),
    ("HPT", "Hauptspeisen", "Mains", 1, False, (
        ("Wiener Schnitzel vom Kalb", "26.90"), ("Schweinsschnitzel", "17.90"),
        ("Tafelspitz", "27.50"), ("Zwiebelrostbraten", "28.90"), ("Rindsgulasch", "17.50"),
        ("Backhendl", "18.90"), ("Schweinsbraten mit Knödel", "16.90"),
        ("Käsespätzle", "14.50"), ("Eierschwammerl mit Knödel", "17.90"),
        ("Forelle Müllerin", "24.90"), ("Cordon Bleu", "19.90"), ("Beuschel", "15.90"),
        ("Krautfleckerl", "12.90"), ("Fiakergulasch", "18.90"), ("Stelze", "21.90"),
        ("Gemüselaibchen", "14.90"), ("Zanderfilet", "26.50"), ("Kalbsrahmgulasch", "23.90"),
        ("Blunzengröstl", "15.50"), ("Grillteller", "24.50"),
    )),
    ("DES", "Desserts", "Desserts", 1, False, (
        ("Kaiserschmarrn", "12.90"), ("Apfelstrudel", "6.90"), ("Topfenstrudel", "6.90"),
        ("Sachertorte", "6.50"), ("Palatschinken", "8.50"), ("Marillenknödel", "10.90"),
        ("Mohr im Hemd", "8.90"), ("Salzburger Nockerl", "16.90"), ("Powidltascherl", "8.90"),
        ("Eisbecher", "7.90"), ("Topfenknödel", "9.50"), ("Germknödel", "9.90"),
    )),
    ("ANT", "Alkoholfreie Getränke", "Soft drinks", 3, False, (
        ("Almdudler 0,33", "4.20"), ("Mineralwasser 0,33", "3.60"),
        ("Mineralwasser 0,75", "7.20"), ("Apfelsaft gespritzt 0,5", "4.50"),
        ("Holunder gespritzt 0,5", "4.50"), ("Cola 0,33", "4.20"), ("Eistee 0,33", "4.20"),
        ("Orangensaft 0,25", "4.60"), ("Johannisbeersaft 0,25", "4.20"),
        ("Leitungswasser 0,5", "1.50"), ("Himbeersoda 0,5", "4.20"), ("Kracherl 0,33", "3.90"),
    )),
    ("BIE", "Bier", "Beer", 3, False, (
        ("Ottakringer Seidel 0,3", "4.40"), ("Ottakringer Krügerl 0,5", "5.40"),
        ("Stiegl Goldbräu 0,5", "5.50"), ("Zwickl 0,5", "5.70"), ("Radler 0,5", "5.20"),
        ("Weizenbier 0,5", "5.80"), ("Alkoholfreies Bier 0,33", "4.60"),
        ("Pils 0,3", "4.30"), ("Märzen 0,5", "5.30"), ("Dunkles 0,5", "5.60"),
    )),
    ("WEI", "Wein", "Wine", 3, False, (
        ("Grüner Veltliner 1/8", "4.60"), ("Gemischter Satz 1/8", "4.90"),
        ("Zweigelt 1/8", "5.20"), ("Blaufränkisch 1/8", "5.40"),
        ("Weißer Spritzer 0,25", "3.90"), ("Roter Spritzer 0,25", "4.10"),
        ("Sauvignon Blanc 1/8", "5.80"), ("Riesling Smaragd 1/8", "7.20"),
        ("Schilcher 1/8", "4.90"), ("Grüner Veltliner Flasche", "32.00"),
        ("Zweigelt Flasche", "36.00"), ("Sekt 0,1", "6.90"), ("Uhudler 1/8", "5.10"),
        ("Rosé 1/8", "5.00"),
    )),
    ("SPI", "Spirituosen", "Spirits", 3, False, (
        ("Marillenbrand 2cl", "4.90"), ("Williams 2cl", "4.90"), ("Zirbenschnaps 2cl", "4.50"),
        ("Obstler 2cl", "3.90"), ("Vogelbeere 2cl", "6.90"), ("Gin Tonic", "11.50"),
        ("Aperol Spritz", "7.90"), ("Hugo", "7.50"), ("Jägertee", "6.50"),
        ("Glühwein", "5.90"),
    )),
    ("KAF", "Kaffee & Tee", "Coffee & tea", 3, False, (
        ("Melange", "4.60"), ("Großer Brauner", "5.20"), ("Kleiner Brauner", "3.90"),
        ("Einspänner", "5.40"), ("Verlängerter", "4.20"), ("Espresso", "3.30"),
        ("Cappuccino", "4.60"), ("Latte Macchiato", "4.90"), ("Heiße Schokolade", "4.90"),
        ("Tee", "3.90"), ("Kräutertee", "3.90"), ("Fiaker", "7.50"),
    )),
    ("FRU", "Frühstück", "Breakfast", 1, True, (
        ("Frühstücksbuffet", "24.00"), ("Wiener Frühstück", "12.90"),
        ("Eierspeis mit Speck", "9.80"), ("Müsli mit Joghurt", "7.90"),
        ("Croissant", "3.20"), ("Semmel mit Butter", "2.90"),
        ("Ham and Eggs", "10.90"), ("Bircher Müsli", "7.50"),
    )),
    ("NAE", "Nächtigung", "Accommodation", 1, True, (
        ("Nächtigung Einzelzimmer", "119.00"), ("Nächtigung Doppelzimmer", "169.00"),
        ("Nächtigung Suite", "289.00"), ("Ortstaxe", "2.60"), ("Hund im Zimmer", "15.00"),
        ("Late Check-out", "35.00"),
    )),
    ("WEL", "Wellness & Eintritt", "Spa & admission", 2, True, (
        ("Sauna Tageseintritt", "29.00"), ("Massage 50 min", "79.00"),
        ("Dampfbad", "19.00"), ("Fitness Tagespass", "14.00"), ("Führung Altstadt", "22.00"),
    )),
    ("SHO", "Shop", "Shop", 3, False, (
        ("Kürbiskernöl 0,25", "12.90"), ("Hausmarmelade", "7.90"), ("Kochbuch", "29.90"),
        ("Hauswein Flasche zum Mitnehmen", "14.90"), ("Mozartkugeln 6er", "8.90"),
        ("Gutschein Einlösung Geschenk", "0.00"),
    )),
)

# Side dishes offered for a product category: (name, gross surcharge per unit)
_SIDE_DISHES = {
    "HPT": (("Preiselbeeren", "1.20"), ("Pommes statt Erdäpfelsalat", "1.50"),
            ("Extra Sauce", "2.00"), ("Ohne Zwiebel", "0.00"), ("Reis statt Knödel", "0.00")),
    "KAF": (("Hafermilch", "0.50"), ("Extra Shot", "0.90"), ("Schlagobers", "0.60")),
    "DES": (("Vanilleeis", "2.20"), ("Schlagobers", "0.90")),
    "SPI": (("Doppelt", "4.50"),),
}


@dataclass(frozen=True)
class CatalogProduct:
    """One product as the receipts generator needs it (the API shape is built from it)."""

    product: m.Product
    category: m.ProductCategory
    gross: Decimal
    vat: Decimal
    side_dishes: tuple[tuple[str, Decimal], ...] = field(default=())


def net_of(gross: Decimal, vat: Decimal) -> Decimal:
    return (gross * 100 / (100 + vat)).quantize(Decimal("0.01"))


@cache
def catalog(location_id: int) -> tuple[tuple[CatalogProduct, ...], tuple[m.ProductCategory, ...]]:
    """The products and product categories of a location, in id order."""
    loc = location(location_id)
    assert loc is not None, location_id
    products: list[CatalogProduct] = []
    categories: list[m.ProductCategory] = []
    article = 1000
    for cat_index, (suffix, name, name_en, tax_id, hotel_only, items) in enumerate(_CATEGORIES):
        if hotel_only and loc.kind != "hotel":
            continue
        vat = VAT_RATES[tax_id]
        bar = suffix in {"BIE", "SPI"}
        category = m.ProductCategory(
            id=location_id * 100 + cat_index + 1,
            external_id=f"PG-{suffix}",
            name=name,
            external_name=name if cat_index % 3 else "",
            cashbox=m.CategoryCashbox(
                cashbox_id=loc.bar_cashbox_id if bar else loc.primary_cashbox_id,
                supplier_id=None if cat_index % 2 else 700 + cat_index,
            ),
            tax=m.CategoryTax(tax_rate_id=tax_id, vat=vat),
            localizations=[m.CategoryLocalization(
                locale="en", name=name_en,
                image_url=f"https://img.example.com/cat-{suffix.lower()}.jpg"
                if cat_index % 2 == 0 else None)]
            + ([m.CategoryLocalization(locale="it", name=None, description="Specialità")]
               if cat_index % 4 == 0 else []),
        )
        categories.append(category)
        sides = tuple((n, Decimal(p)) for n, p in _SIDE_DISHES.get(suffix, ()))
        for item_index, (pname, price) in enumerate(items):
            article += 1
            gross = Decimal(price)
            product_tax = PASS_THROUGH.get(pname, tax_id)
            pid = location_id * 1000 + len(products) + 1
            has_nutrition = item_index % 3 == 0
            product = m.Product(
                id=pid,
                product_nr=str(article),
                gtin=f"90{article:011d}" if item_index % 2 == 0 else "",
                external_product_id=f"ART-{article}",
                name=pname,
                external_name="" if item_index % 4 == 0 else pname,
                subtitle="",
                description=f"{pname} aus unserer Küche" if suffix in {"HPT", "VOR"} else "",
                pricing=m.Pricing(
                    default_price=gross,
                    reference_price=(gross + Decimal("1.00")) if item_index % 7 == 3 else None,
                    tax_rate_id=product_tax,
                    allow_client_price=suffix == "SHO",
                ),
                cashbox=m.ProductCashbox(
                    cashbox_id=loc.bar_cashbox_id if bar else loc.primary_cashbox_id,
                    production_place_id=None if suffix == "SHO" else (2 if bar else 1),
                    parent_product_id=(pid - 1) if item_index % 11 == 10 else None,
                ),
                media=m.Media(image_url=f"https://img.example.com/{article}.jpg"),
                flags=m.ProductFlags(
                    is_visible=item_index % 13 != 12,
                    is_locked=item_index % 5 == 4,
                    queued_for_review=item_index % 17 == 16,
                ),
                nutrition=m.Nutrition(
                    amount=Decimal(250 + 50 * (item_index % 4)) if has_nutrition else None,
                    amount_unit=("ml" if tax_id == 3 else "g") if has_nutrition else None,
                    calories=Decimal(120 + 35 * item_index) if has_nutrition else None,
                    allergens=(1 << (item_index % 14)) | (1 if suffix == "HPT" else 0),
                    minimum_age=18 if suffix == "SPI" else (16 if suffix in {"BIE", "WEI"} else 0),
                    ingredients=[m.Ingredient(name=i) for i in ("Mehl", "Ei", "Salz")]
                    if has_nutrition else [],
                    nutritional_values=[
                        m.NutritionalValue(name="Energie", unit="kcal",
                                           value=str(120 + 35 * item_index)),
                        m.NutritionalValue(name="Fett", unit="g", value="4.5", belongs_to=None),
                    ] + ([m.NutritionalValue(name="Zucker", unit="g", value="1.2",
                                             belongs_to=pid * 10 + 1)]
                         if item_index % 6 == 0 else []) if has_nutrition else [],
                ),
                product_group_external_ids=[category.external_id]
                + (["PG-SHO"] if suffix == "WEI" and item_index % 5 == 0 else []),
                localizations=[m.ProductLocalization(
                    locale="en", name=f"{pname} (en)",
                    subtitle="House speciality" if item_index % 4 == 1 else None,
                    description=f"{pname}, freshly made" if item_index % 2 == 0 else None,
                    image_url=f"https://img.example.com/{article}-en.jpg"
                    if item_index % 3 == 0 else None)]
                + ([m.ProductLocalization(locale="de-DE", name=pname, subtitle=None)]
                   if item_index % 6 == 0 else []),
            )
            products.append(CatalogProduct(product, category, gross,
                                           VAT_RATES[product_tax], sides))
    return tuple(products), tuple(categories)


def tourist_tax_products() -> list[int]:
    """The product numbers of the tourist tax in the sandbox's catalogs (its hotels')."""
    return sorted({int(p.product.product_nr) for loc in LOCATIONS
                   for p in catalog(loc.id)[0] if p.product.name == TOURIST_TAX})


@cache
def spots(location_id: int) -> tuple[m.Spot, ...]:
    """Tables with areas, hotel rooms, pickup, delivery and a drive-in lane of a location."""
    loc = location(location_id)
    assert loc is not None, location_id
    result: list[m.Spot] = []
    areas = (("Gastraum", 14), ("Terrasse", 8), ("Bar", 4))
    loc_ref = m.SpotLocation(location_id=location_id, location_short_code=loc.short_code)

    def add(kind: str, number: int | None, name: str, **extra) -> None:
        sid = location_id * 1000 + len(result) + 1
        result.append(m.Spot(
            id=sid,
            external_spot_id=f"S-{sid}",
            number=number,
            name=name,
            alternative_name=extra.pop("alternative_name", ""),
            description="",
            qr_code=f"https://order.example.com/q/{loc.short_code}-{sid}",
            type=kind,
            location=loc_ref,
            flags=m.SpotFlags(
                visible_in_app=kind != "Spot",
                supports_table_order=kind in {"Table", "Room"},
                supports_cash_payment=kind != "Delivery",
                default_to_take_away=kind in {"Pickup", "Delivery", "DriveIn"},
                display_as_button=kind == "Pickup",
            ),
            **extra,
        ))

    number = 0
    for area_index, (area_name, count) in enumerate(areas):
        area = m.SpotArea(area_id=location_id * 10 + area_index + 1, name=area_name,
                          external_area_id=f"A-{area_index + 1}")
        for _ in range(count):
            number += 1
            add("Table", number, f"Tisch {number}", capacity=2 + 2 * (number % 3), area=area,
                geo=m.SpotGeo(latitude=48.2 + number / 1e4, longitude=16.37) if area_name ==
                "Terrasse" else None)
    if loc.kind == "hotel":
        for room in (101, 102, 103, 104, 105, 201, 202, 203, 204, 205, 301, 302):
            add("Room", room + loc.room_nr_spot_nr_offset, f"Zimmer {room}",
                alternative_name=str(room), capacity=2 if room < 300 else 4)
    add("Pickup", 90, "Abholung Theke")
    add("Delivery", 91, "Lieferzone 1010-1090")
    add("Delivery", 92, "Lieferzone Umland")
    add("Spot", None, "Schanigarten Stehtisch")
    if loc.id == 1001:
        add("DriveIn", 95, "Drive-in Spur")  # a type outside the spec's named values
    return tuple(result)


STAFF_NAMES = ("Anna Huber", "Lukas Gruber", "Sophie Wagner", "Maximilian Bauer",
               "Lena Pichler", "Tobias Steiner", "Julia Moser", "David Hofer")


def staff(location_id: int) -> tuple[m.Staff, ...]:
    """The operators of a location."""
    return tuple(
        m.Staff(id=f"st-{location_id}-{i + 1}", number=i + 1, name=name)
        for i, name in enumerate(STAFF_NAMES)
    )


# Payment types: (id, nr, name, fibu account); the hotel adds the room charge.
PAYMENT_TYPES = (
    m.PaymentType(id=1, nr=1, name="Bar"),
    m.PaymentType(id=2, nr=2, name="Bankomat"),
    m.PaymentType(id=3, nr=3, name="Kreditkarte"),
    m.PaymentType(id=4, nr=4, name="Gutschein"),
    m.PaymentType(id=5, nr=5, name="Zimmerrechnung"),
    m.PaymentType(id=6, nr=None, name="Online"),
)
FIBU_ACCOUNTS = {1: "2700", 2: "2780", 3: "2790", 4: "3600", 5: "2000", 6: None}
"""The POS's own ledger accounts (``fibuAccountNr``) of each payment type: an Austrian
client's (EKR); the online orders' type has none."""
CONFIG_PAYMENT_ACCOUNTS = {"Online": "2795"}
"""What the sandbox's configs map in ``[accounting.accounts] payment_accounts``: the type
the POS gives no account (online payments, on their way from the payment provider)."""
CONFIG_GROUP_ACCOUNTS = {"Nicht umsatzwirksam": "6700"}
"""What the sandbox's configs map in ``non_revenue_accounts``: the staff meals' payment
group (booked against staff welfare, freiwilliger Sozialaufwand), so nothing the sandbox
books waits on the suspense account."""

UMSATZWIRKSAM = m.PaymentGroup(id=1, name="Umsatzwirksam")
VOUCHER_SALE = m.PaymentGroup(id=2, name="Gutscheinverkauf")
NOT_REVENUE = m.PaymentGroup(id=3, name="Nicht umsatzwirksam")
NO_GROUP = m.PaymentGroup(id=0, name="")
