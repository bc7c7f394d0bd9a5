"""The typed intermediate representation and what judges it before tools run: LowAltitudeIR, Decision, Failure,
layered validation, tool-plan execution and the R7 / R8 policy checks. Imports only tools/."""
