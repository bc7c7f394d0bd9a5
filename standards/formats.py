"""The names of the file formats this package reads and writes, apart from their code (so building `cloudbrain`'s
argument parser imports none of it)."""

from __future__ import annotations

from typing import Literal

# UAS geographical zone files read and written (standards/zone_files.py)
ZONE_FORMATS = ("ed269", "ed318", "geojson")
# flight plans an execute is exported as (standards/flight_plans.py)
PlanFormat = Literal["f3548", "qgc-plan", "mavlink", "geojson", "kml"]
PLAN_FORMATS: tuple[PlanFormat, ...] = ("f3548", "qgc-plan", "mavlink", "geojson", "kml")
SIDECAR_SUFFIX = ".cloudbrain.json"  # the provenance of a format that cannot carry it (mavlink)
SIDECAR_FORMATS: tuple[PlanFormat, ...] = ("mavlink",)
