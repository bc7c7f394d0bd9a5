"""The airspace's own formats: geodetic frames, UAS geographical zones in and out, executes as flight plans."""
