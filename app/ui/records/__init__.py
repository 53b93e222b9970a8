"""The verification record PDFs (PROTOCOL §11), drawn with Qt, and the button both screens offer
them with."""
