"""The layout explorer: pictures of memory order, the module graph laid out for drawing, the
page served at ``/`` and the self-contained HTML report of ``assign --html``."""
