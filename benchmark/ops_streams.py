"""Request streams for operations mode: many operators' delivery requests arriving on one world, some of them
emergencies, so the later ones must be planned around the earlier ones' approved intents."""

from __future__ import annotations

import numpy as np

from tools.world import EntityKind, UAVStatus, World

PLACE_KINDS = (
    EntityKind.hospital,
    EntityKind.depot,
    EntityKind.charging_pad,
    EntityKind.accident_site,
    EntityKind.police,
    EntityKind.fire_station,
    EntityKind.vertiport,
    EntityKind.warehouse,
    EntityKind.office,
    EntityKind.metro_station,
)
OWNERS = ("medlift", "cityparcel", "firstresponse", "quickfood", "gridcheck")
CARGO = ("a parcel (1 kg)", "medicine (0.5 kg)", "a blood sample (0.3 kg)", "documents (0.2 kg)", "a meal (0.8 kg)")


def ops_world(world: World) -> World:
    """The world as an operations day starts: every UAV not in maintenance idle and charged (the single-request
    scenarios tie UAVs up as busy, charging or nearly flat to make one request hard; in a stream, the stream ties
    them up itself: a UAV flies one intent at a time and lands with the battery its flight left it)."""
    ready = {"status": UAVStatus.idle, "battery_ratio": 1.0}
    fleet = [u if u.status is UAVStatus.maintenance else u.model_copy(update=ready) for u in world.fleet]
    return world.model_copy(update={"fleet": fleet})


def request_stream(
    world: World,
    rng: np.random.Generator,
    size: int,
    *,
    stream_id: str = "s",
    emergency_share: float = 0.15,
    spacing_sec: tuple[float, float] = (3.0, 25.0),
) -> list[dict]:
    """`size` requests between the world's places, arriving `spacing_sec` apart, in plain English by place name."""
    places = [e for e in world.entities if e.kind in PLACE_KINDS]
    if len(places) < 2:
        raise ValueError(f"world {world.world_id} has fewer than two places to fly between")
    requests, at = [], 0.0
    for number in range(1, size + 1):
        origin, destination = (places[i] for i in rng.choice(len(places), size=2, replace=False))
        emergency = bool(rng.random() < emergency_share)
        cargo = CARGO[int(rng.integers(len(CARGO)))]
        text = f"Send a drone with {cargo} from {origin.name or origin.id} to {destination.name or destination.id}."
        requests.append(
            {
                "at_sec": round(at, 1),
                "instruction": f"Emergency: {text}" if emergency else text,
                "priority": "emergency" if emergency else "normal",
                "request_id": f"{stream_id}-r{number:02d}",
                "owner": OWNERS[int(rng.integers(len(OWNERS)))],
            }
        )
        at += float(rng.uniform(*spacing_sec))
    return requests
