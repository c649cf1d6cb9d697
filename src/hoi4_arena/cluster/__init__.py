"""Several machines: the worker protocol over TLS (stations, peers, bundles).

`tls.py` makes and pins station certificates; `peers.py` holds the station bundle and the client's peers
file; `station.py` serves a worker over TLS 1.3 with a token and connects to one.
"""
