"""Readers for the outputs of launchgap's own test workloads."""
