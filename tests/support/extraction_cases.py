"""Extraction cases for the speculative decoding benchmark: a document (a few hundred tokens) and a
JSON Schema whose values come from it. Four kinds (invoices, person records, shipping notices,
event listings), each with several layouts, filled from seeded random choices.

Example::

    for case in extraction_cases(8, seed=0):
        print(case.name, case.expected)        # the values the document holds
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["ExtractionCase", "extraction_cases"]

FIRST = ["Maria", "John", "Aiko", "Pierre", "Fatima", "Lars", "Chen", "Olga", "Rahul", "Grace", "Tomasz",
         "Isabel", "Kwame", "Sofia", "Henrik", "Lucia", "Dmitri", "Amara", "Noah", "Yara"]
LAST = ["Fernandez", "Okafor", "Lindqvist", "Nakamura", "Dubois", "Kowalski", "Haddad", "Moreau", "Schmidt",
        "Patel", "O'Brien", "Rossi", "Andersen", "Mensah", "Volkova", "Castillo", "Brennan", "Takahashi"]
STREETS = ["Maple Avenue", "Harbour Road", "Rue des Lilas", "Kings Street", "Birch Lane", "Old Mill Road",
           "Station Square", "Elm Court", "Via Roma", "Lakeside Drive", "Market Street", "Bridge Street"]
CITIES = [("Lyon", "France"), ("Leeds", "United Kingdom"), ("Porto", "Portugal"), ("Gdansk", "Poland"),
          ("Osaka", "Japan"), ("Denver", "United States"), ("Accra", "Ghana"), ("Bergen", "Norway"),
          ("Toronto", "Canada"), ("Valencia", "Spain"), ("Hamburg", "Germany"), ("Cork", "Ireland")]
COMPANIES = ["Northwind Traders", "Bluefin Logistics", "Acme Tooling", "Silverline Media", "Greenleaf Foods",
             "Orbital Systems", "Harbor & Pike", "Redwood Analytics", "Cobalt Print Works", "Summit Outfitters"]
ITEMS = ["ergonomic office chair", "stainless steel water bottle", "wireless barcode scanner",
         "A4 recycled paper (box of 5 reams)", "LED desk lamp", "USB-C docking station", "standing desk frame",
         "noise cancelling headset", "label printer ribbon", "thermal shipping labels"]
JOBS = ["data analyst", "civil engineer", "nurse practitioner", "software developer", "pastry chef",
        "veterinary surgeon", "high school teacher", "marine biologist", "accountant", "architect"]
EVENTS = ["Spring Jazz Night", "Open Source Summit", "Regional Chess Championship", "Farmers' Market Festival",
          "Introduction to Pottery", "City Half Marathon", "Film Noir Retrospective", "Robotics Workshop"]
VENUES = ["the Grand Hall", "Riverside Pavilion", "the Old Library", "Community Centre West", "Arena North",
          "the Botanical Gardens", "Studio 9", "Union Auditorium"]
CARRIERS = ["DHL Express", "UPS Standard", "FedEx Ground", "La Poste Colissimo", "Royal Mail Tracked 48"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

# Boilerplate that makes documents realistic in length and gives the lookup wrong places to match.
FILLER = [
    "Please retain this document for your records. If any of the details above are incorrect, contact our "
    "office within fourteen days so that we can correct them before the next processing cycle.",
    "All amounts are stated in the currency indicated. Late payments may incur a fee of 1.5% per month on the "
    "outstanding balance, in accordance with the terms and conditions agreed at the time of order.",
    "This notice was generated automatically. Replies to this address are not monitored; use the customer "
    "portal or call the number printed on the back of your card for any questions.",
    "Our opening hours are Monday to Friday, 9:00 to 17:30, and Saturday 10:00 to 14:00. We are closed on "
    "public holidays. Accessibility assistance is available on request at all of our locations.",
    "Personal data in this record is processed under the applicable data protection regulations and is kept "
    "only as long as necessary for the purposes described in our privacy statement.",
]


@dataclass
class ExtractionCase:
    """One document, the instruction, the schema of the answer and the values the document holds."""

    name: str
    prompt: str
    schema: dict
    expected: dict


def _obj(props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


S, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def _person(r: random.Random) -> tuple[str, dict, dict]:
    first, last, (city, country) = r.choice(FIRST), r.choice(LAST), r.choice(CITIES)
    v = {"full_name": f"{first} {last}", "occupation": r.choice(JOBS), "birth_year": r.randint(1950, 2003),
         "email": f"{first.lower()}.{last.lower().replace(chr(39), '')}@{r.choice(['mail.com', 'example.org', 'post.net'])}",
         "street_address": f"{r.randint(1, 250)} {r.choice(STREETS)}", "city": city, "country": country,
         "phone": f"+{r.randint(30, 49)} {r.randint(100, 999)} {r.randint(1000, 9999)} {r.randint(100, 999)}"}
    doc = r.choice([
        f"PERSONNEL RECORD\nName: {v['full_name']}\nPosition: {v['occupation']}\nYear of birth: {v['birth_year']}\n"
        f"Contact email: {v['email']}\nTelephone: {v['phone']}\nHome address: {v['street_address']}, {city}, "
        f"{country}\n",
        f"{v['full_name']} was born in {v['birth_year']} and works as a {v['occupation']}. They live at "
        f"{v['street_address']} in {city}, {country}. They can be reached by phone at {v['phone']} or by email "
        f"at {v['email']}.\n"])
    schema = _obj({"full_name": S, "occupation": S, "birth_year": INT, "email": S, "phone": S,
                   "street_address": S, "city": S, "country": S})
    return doc, schema, v


def _invoice(r: random.Random) -> tuple[str, dict, dict]:
    qty, price = r.randint(1, 40), r.randint(300, 99999) / 100
    v = {"invoice_number": f"INV-{r.randint(2019, 2025)}-{r.randint(10000, 99999)}", "seller": r.choice(COMPANIES),
         "buyer": f"{r.choice(FIRST)} {r.choice(LAST)}", "item": r.choice(ITEMS), "quantity": qty,
         "unit_price": price, "total": round(qty * price, 2),
         "due_date": f"{r.randint(1, 28)} {r.choice(MONTHS)} {r.randint(2024, 2026)}"}
    doc = r.choice([
        f"INVOICE {v['invoice_number']}\nFrom: {v['seller']}\nBill to: {v['buyer']}\n\nDescription: {v['item']}\n"
        f"Quantity: {qty}\nUnit price: {price:.2f} EUR\nTotal due: {v['total']:.2f} EUR\n"
        f"Payment due by {v['due_date']}.\n",
        f"{v['seller']} hereby invoices {v['buyer']} for {qty} x {v['item']} at {price:.2f} EUR each, a total "
        f"of {v['total']:.2f} EUR (invoice number {v['invoice_number']}). Payment is due on {v['due_date']}.\n"])
    schema = _obj({"invoice_number": S, "seller": S, "buyer": S, "item": S, "quantity": INT, "unit_price": NUM,
                   "total": NUM, "due_date": S})
    return doc, schema, v


def _shipping(r: random.Random) -> tuple[str, dict, dict]:
    city, country = r.choice(CITIES)
    v = {"tracking_number": f"{r.choice(['JD', 'RM', '1Z'])}{r.randint(10**9, 10**10 - 1)}",
         "carrier": r.choice(CARRIERS), "recipient": f"{r.choice(FIRST)} {r.choice(LAST)}",
         "destination": f"{r.randint(1, 250)} {r.choice(STREETS)}, {city}, {country}",
         "weight_kg": r.randint(1, 400) / 10, "parcels": r.randint(1, 6),
         "estimated_delivery": f"{r.choice(MONTHS)} {r.randint(1, 28)}, {r.randint(2024, 2026)}"}
    doc = r.choice([
        f"SHIPPING NOTICE\nYour order has been dispatched with {v['carrier']}.\nTracking number: "
        f"{v['tracking_number']}\nRecipient: {v['recipient']}\nDelivery address: {v['destination']}\n"
        f"Parcels: {v['parcels']} (total weight {v['weight_kg']} kg)\nEstimated delivery: "
        f"{v['estimated_delivery']}\n",
        f"Good news, {v['recipient']}! {v['parcels']} parcel(s) weighing {v['weight_kg']} kg in total left our "
        f"warehouse today with {v['carrier']} (tracking {v['tracking_number']}). They are on their way to "
        f"{v['destination']} and should arrive by {v['estimated_delivery']}.\n"])
    schema = _obj({"tracking_number": S, "carrier": S, "recipient": S, "destination": S, "weight_kg": NUM,
                   "parcels": INT, "estimated_delivery": S})
    return doc, schema, v


def _event(r: random.Random) -> tuple[str, dict, dict]:
    city, _ = r.choice(CITIES)
    v = {"title": r.choice(EVENTS), "venue": r.choice(VENUES), "city": city,
         "date": f"{r.choice(['Friday', 'Saturday', 'Sunday'])} {r.randint(1, 28)} {r.choice(MONTHS)}",
         "start_time": f"{r.randint(9, 20)}:{r.choice(['00', '15', '30', '45'])}",
         "ticket_price": r.randint(0, 120), "organizer": r.choice(COMPANIES),
         "contact": f"events@{r.choice(COMPANIES).split()[0].lower()}.com"}
    doc = r.choice([
        f"EVENT LISTING\n{v['title']}\nWhere: {v['venue']}, {city}\nWhen: {v['date']}, doors open at "
        f"{v['start_time']}\nTickets: {v['ticket_price']} EUR\nOrganised by {v['organizer']}. Questions: "
        f"{v['contact']}\n",
        f"Join us for {v['title']} at {v['venue']} in {city} on {v['date']}, starting at {v['start_time']}. "
        f"Tickets cost {v['ticket_price']} EUR. The event is organised by {v['organizer']}; write to "
        f"{v['contact']} with any questions.\n"])
    schema = _obj({"title": S, "venue": S, "city": S, "date": S, "start_time": S, "ticket_price": INT,
                   "organizer": S, "contact": S})
    return doc, schema, v


KINDS = (("person", _person), ("invoice", _invoice), ("shipping", _shipping), ("event", _event))


def extraction_cases(count: int = 24, seed: int = 0) -> list[ExtractionCase]:
    """``count`` cases, cycling through the kinds, each document padded with boilerplate paragraphs
    before and after the record (a few hundred tokens in all)."""
    if count < 1:
        raise ValueError(f"extraction_cases: count must be >= 1, got {count}")
    r = random.Random(seed)
    cases = []
    for i in range(count):
        kind, make = KINDS[i % len(KINDS)]
        doc, schema, values = make(r)
        before, after = r.sample(FILLER, 2), r.sample(FILLER, 1)
        text = "\n\n".join(before + [doc.strip()] + after)
        keys = ", ".join(schema["properties"])
        prompt = (f"Extract the following fields from the document below and answer in JSON: {keys}. Copy the "
                  f"values exactly as written in the document.\n\nDOCUMENT:\n{text}")
        cases.append(ExtractionCase(f"{kind}-{i}", prompt, schema, values))
    return cases
