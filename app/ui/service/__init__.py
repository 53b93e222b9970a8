"""The Service screen: the embedded or office service, its address and TLS (panel.py,
address.py)."""
