"""The reading of an operator's request, owned by no model: which places, zones and UAVs it names and in what role
(grounding, mentions), the quantities it states (quantities), what it binds an execute to (stated) and the
defaults a request that leaves a fact out implies (defaults). The rules model, the local model's slots, the gold
checks and the gates all read requests through this package; the gates import nothing from `models`."""
