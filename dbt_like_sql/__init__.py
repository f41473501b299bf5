"""The SQL models of the warehouse (staging -> marts -> reports) and their macros.

A package only so that the ``.sql`` files travel with every install as package data.
"""
