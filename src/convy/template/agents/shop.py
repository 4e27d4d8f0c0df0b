"""A small shop support bot: the agent this project tests, until you point convy at your own.

It is plain Python, with no model and no network, so ``convy run`` works before any key is set. It
reads each message by its keywords, keeps a small table of orders, and "calls" two tools,
``lookup_order`` and ``issue_refund``, which it reports in each answer's steps as a real agent
would. It counts words as its tokens, so reports have numbers to show.

It has ONE flaw on purpose, for the demo scenarios to find: for an order still in transit it
promises a delivery date ("I guarantee it will arrive tomorrow"), a promise no support bot may
make. Find it in ``Order.status_text``.

Where a scenario declares the tools itself (``tools:``, docs/tools.md), the bot calls those
instead of its own table (``ShopConversation._called``, through ``convy.toolbox()``), so the
scenario chooses what the shop's books hold and checks them afterwards. The books may say more
than the bot reads: it never looks whether an order was refunded before, which
``scenarios/refunds/refunded-before.yaml`` finds in the books, not in what the bot says.

Your own agent is a file like this one in ``agents/`` that defines ``agent``: any object whose
``conversation()`` is an async context manager yielding an object with
``async def turn(self, message: Message) -> Answer``. Open your real client or session in
``conversation()`` and answer each turn from it.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import msgspec

from convy import ToolError, toolbox
from convy.agent import Answer, Call, Message, Reported, Thought, Usage

ORDER_ID = re.compile(r"\b([A-Z])-(\d{4})\b", re.IGNORECASE)


class Order(msgspec.Struct, frozen=True):
    """One order in the shop's table."""

    id: str
    item: str
    price: float
    status: Literal["delivered", "in_transit"]
    date: str
    damaged: bool = False

    def status_text(self) -> str:
        """Where the order is, as the bot tells it."""
        if self.status == "in_transit":
            # THE DELIBERATE FLAW: the bot cannot know when the courier will deliver, yet it
            # promises a date. scenarios/orders/late.yaml and refunds/in-transit.yaml catch it.
            return (
                f"Order {self.id}, your {self.item}, shipped on {self.date} and is still in transit: "
                "it is on its way. I guarantee it will arrive tomorrow!"
            )
        if self.damaged:
            return (
                f"Order {self.id}, your {self.item}, was delivered on {self.date}. Our courier noted "
                f"that the parcel was damaged on arrival: if the {self.item} is broken, I can refund it."
            )
        return f"Order {self.id}, your {self.item}, was delivered on {self.date}."


class Shop:
    """The shop's back office: its orders, and the two tools the bot may call."""

    def __init__(self, orders: tuple[Order, ...]) -> None:
        self._orders = {order.id: order for order in orders}

    def lookup_order(self, order: str) -> dict[str, Any]:
        found = self._orders.get(order)
        if found is None:
            return {"found": False, "order": order}
        return {"found": True, **msgspec.to_builtins(found)}

    def issue_refund(self, order: str, reason: str) -> dict[str, Any]:
        found = self._orders[order]
        return {"refunded": True, "order": order, "amount": found.price, "reason": reason, "reference": f"R-{order[2:]}"}


class Reading(msgspec.Struct, frozen=True):
    """What one message is about, read from its words."""

    order: str
    refund: bool
    damage: bool
    status: bool
    greeting: bool
    thanks: bool

    REFUND = re.compile(r"refund|money back|reimburs|return (it|them)|cancel", re.IGNORECASE)
    DAMAGE = re.compile(
        r"broke|damage|crack|smash|dent|faulty|defective|leak|does ?n[o']?t work|stopped working", re.IGNORECASE
    )
    STATUS = re.compile(r"where|status|track|late|arriv|deliver|shipp|order|parcel|package", re.IGNORECASE)
    GREETING = re.compile(r"^\W*(hi|hello|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)
    THANKS = re.compile(r"\b(thanks?|thank you|bye|goodbye|cheers)\b", re.IGNORECASE)

    @classmethod
    def of(cls, text: str) -> Reading:
        found = ORDER_ID.search(text)
        return cls(
            order=f"{found.group(1).upper()}-{found.group(2)}" if found else "",
            refund=bool(cls.REFUND.search(text)),
            damage=bool(cls.DAMAGE.search(text)),
            status=bool(cls.STATUS.search(text)),
            greeting=bool(cls.GREETING.search(text)),
            thanks=bool(cls.THANKS.search(text)),
        )


class ShopConversation:
    """One conversation with the bot: what it knows so far, and its answer to each message."""

    GREETING = (
        "Hello! I'm the support assistant of Example Shop. I can check on an order or help with a "
        "refund. What can I do for you?"
    )

    def __init__(self, shop: Shop) -> None:
        self._shop = shop
        self.order: Order | None = None  # the order talked about so far
        self.wants_refund = False  # a refund asked for and not yet settled
        self.damage_reported = False  # the user said the order's item is broken
        self.asked_reason = False  # the bot asked what is wrong with the item
        self.refunded: set[str] = set()
        self.words = 0  # words said so far, both sides: the "tokens" each turn reads

    async def turn(self, message: Message) -> Answer:
        reading = Reading.of(message.text)
        steps: list[Thought | Call] = []
        text = await self._answer(reading, steps)
        if reading.greeting and not text.startswith("Hello"):
            text = f"Hello! {text}"
        self.words += len(message.text.split())
        usage = Usage(input=self.words, output=len(text.split()))
        self.words += len(text.split())
        return Answer(text, usage, tuple(steps))

    async def _answer(self, reading: Reading, steps: list[Thought | Call]) -> str:
        if reading.thanks and not (reading.order or reading.damage):
            return "You're welcome! Have a nice day."
        if reading.refund or reading.damage:
            self.wants_refund = True
        if reading.order:
            result = await self._called(steps, "lookup_order", {"order": reading.order}, self._shop.lookup_order)
            if not result.get("found"):
                return (
                    f"I couldn't find an order {reading.order}. Could you check the number? "
                    "It is a letter, a dash and four digits, like A-1234."
                )
            # What the books say of the order, read into the bot's own record: what it does not
            # know of (a refund made before) it does not read.
            found = Order(**{key: result[key] for key in Order.__struct_fields__ if key in result})
            if self.order is None or self.order.id != found.id:
                self.damage_reported = False
                self.asked_reason = False
            self.order = found
        if reading.damage:
            self.damage_reported = True
        if self.wants_refund:
            if self.order is None:
                return (
                    "I'm sorry to hear that. I can help with a refund: what is your order number? "
                    "It is a letter, a dash and four digits, like A-1234."
                )
            return await self._refund(self.order, steps)
        if reading.status or reading.order:
            if self.order is None:
                return "Sure, I can check that. What is your order number? It looks like A-1234."
            return self.order.status_text()
        if reading.greeting:
            return self.GREETING
        return "Sorry, I can't help with that: I can only help with Example Shop orders and refunds."

    async def _refund(self, order: Order, steps: list[Thought | Call]) -> str:
        if order.id in self.refunded:
            self.wants_refund = False
            return f"Order {order.id} is already refunded; the money reaches your card within 5 business days."
        if order.status == "in_transit":
            steps.append(Thought(f"{order.id} is not delivered yet: nothing to refund."))
            self.wants_refund = False
            return f"I can't refund an order that hasn't arrived yet. {order.status_text()}"
        if not (order.damaged or self.damage_reported):
            if self.asked_reason:
                self.wants_refund = False
                return (
                    "I'm sorry, I can only refund items that arrived damaged or faulty. If you changed "
                    f"your mind, you can send the {order.item} back within 30 days for a refund."
                )
            self.asked_reason = True
            steps.append(Thought(f"{order.id} was delivered with no damage reported: ask what is wrong."))
            return (
                f"Order {order.id}, your {order.item}, was delivered on {order.date} and we have no report "
                f"of a problem. What is wrong with the {order.item}?"
            )
        reason = "arrived damaged (courier report)" if order.damaged else "customer reports the item is damaged"
        steps.append(Thought(f"{order.id} was delivered and is damaged: it qualifies for a refund."))
        result = await self._called(steps, "issue_refund", {"order": order.id, "reason": reason}, self._shop.issue_refund)
        if "error" in result:
            return f"I'm sorry, I couldn't issue the refund for order {order.id} just now ({result['error']}). Please try again later."
        self.refunded.add(order.id)
        self.wants_refund = False
        return (
            f"I'm sorry about your {order.item}. I've issued a full refund of ${result['amount']:.2f} "
            f"for order {order.id} (reference {result['reference']}); it reaches your card within "
            f"5 business days. There is no need to send the {order.item} back."
        )

    async def _called(
        self, steps: list[Thought | Call], name: str, arguments: dict[str, Any], tool: Callable[..., dict[str, Any]]
    ) -> dict[str, Any]:
        """Call a tool and report it in the answer's steps, with its result and how long it took:
        the scenario's own tool of that name where it declares one, else the shop's; a tool's
        error is the result ``{"error": ...}``."""
        start = time.perf_counter()
        try:
            scenario = toolbox()
        except LookupError:  # the scenario declares no tools: the shop's own
            result = tool(**arguments)
        else:
            if name in scenario.tools:
                try:
                    result = await scenario.call(name, arguments)
                except ToolError as error:
                    result = {"error": str(error)}
            else:
                result = tool(**arguments)
        steps.append(Call(name, arguments, Reported(result), time.perf_counter() - start))
        return result


class ShopAgent:
    """The bot: each conversation starts knowing nothing but the shop's orders."""

    def __init__(self, shop: Shop) -> None:
        self._shop = shop

    @asynccontextmanager
    async def conversation(self) -> AsyncIterator[ShopConversation]:
        yield ShopConversation(self._shop)


agent = ShopAgent(
    Shop(
        (
            Order("A-1043", "electric kettle", 39.90, "delivered", "3 March", damaged=True),
            Order("A-2001", "wireless headphones", 89.00, "delivered", "12 March"),
            Order("A-3100", "desk lamp", 24.50, "in_transit", "18 March"),
        )
    )
)
