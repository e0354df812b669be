"""The web app (`web/`, built into `web/dist`) served on the API's own origin. See docs/web.md."""
