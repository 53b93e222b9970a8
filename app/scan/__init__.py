"""Camera scanning without Qt: frame sources, QR decoders and the debounce that accepts a code."""
