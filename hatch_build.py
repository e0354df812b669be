"""Hatchling's build hook: what the server reads at run time from outside `api/` goes into
the distributions as package data (docs/install.md).

- `infra/template.yaml`, the table's single source, is put in the wheel at
  `api/store/template.yaml` (api/store/definition.py looks there first).
- The web app: in a checkout (`web/package.json` is there) `web/scripts/build.sh` builds
  `web/dist` first (nothing to do when its stamp matches the sources). The wheel carries
  `web/dist` at `api/webapp/dist` and the app's page list, `web/src/pages.json`, at
  `api/webapp/pages.json` (api/http/middleware/webapp.py looks there first). The sdist
  carries `web/dist` as it is (no Node needed to build a wheel from it).

Without a built web app the build fails: no wheel or sdist is made without it. An editable
install (`uv sync` in a checkout) carries nothing: it reads `infra/` and `web/` in place."""

import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TEMPLATE = "infra/template.yaml"
WEB_DIST = "web/dist"
PAGES = "web/src/pages.json"
# Where the wheel carries them (the code's lookups name the same paths).
PACKAGED = {
    TEMPLATE: "api/store/template.yaml",
    WEB_DIST: "api/webapp/dist",
    PAGES: "api/webapp/pages.json",
}


class WebAppNotBuilt(RuntimeError):
    pass


class PackageDataHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        if (root / "web" / "package.json").is_file():
            build = root / "web" / "scripts" / "build.sh"
            done = subprocess.run(["bash", str(build)], check=False)  # noqa: S603, S607
            if done.returncode != 0:
                raise WebAppNotBuilt(
                    f"{build} failed (exit {done.returncode}): a distribution without the "
                    "web app is not built. It needs Node 20.19+ and npm."
                )
        for source in PACKAGED:
            if not (root / source).exists():
                raise WebAppNotBuilt(f"{source} is missing: a distribution needs it")
        if not (root / WEB_DIST / "index.html").is_file():
            raise WebAppNotBuilt(f"{WEB_DIST}/index.html is missing: the web app is not built")
        if self.target_name == "wheel":
            build_data["force_include"].update(
                {str(root / source): target for source, target in PACKAGED.items()}
            )
