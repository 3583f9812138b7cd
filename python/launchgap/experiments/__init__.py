"""Repeated runs of a workload under several conditions, with honest statistics."""
