"""The set-up's installer (scripts/install_venv.py): pip's configured package sources handed to uv as its options,
read from the real ``pip config list``; any other setting of pip's sends the install to pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import install_venv  # noqa: E402


def pip_listing(tmp_path, text: str, env: dict) -> str:
    """``pip config list`` with ``text`` as the environment's pip config file and ``env`` on top."""
    conf = tmp_path / "pip.conf"
    conf.write_text(text)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    run_env.update(PIP_CONFIG_FILE=str(conf), **env)
    return subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          env=run_env, check=True).stdout


def test_pips_sources_become_uvs_options_and_the_environment_wins(tmp_path):
    listing = pip_listing(tmp_path, "[global]\nindex-url = https://mirror.example/simple\n"
                          "extra-index-url = file:///a/simple file:///b/simple\ntrusted-host = mirror.example\n"
                          "[install]\nfind-links = /wheels/one\n",
                          {"PIP_FIND_LINKS": "/wheels/two /wheels/three", "PIP_CONSTRAINT": "/c.txt",
                           "PIP_CERT": "/ca.pem", "PIP_DEFAULT_TIMEOUT": "60"})
    settings = install_venv.pip_settings(listing)
    assert settings["find-links"] == "/wheels/two /wheels/three", "PIP_FIND_LINKS overrides the config file"
    ours = ("index-url", "extra-index-url", "trusted-host", "find-links", "constraint", "cert", "default-timeout")
    flags, env = install_venv.uv_options({key: settings[key] for key in ours})  # not the machine's own settings
    pairs = list(zip(flags[::2], flags[1::2]))
    assert ("--index-url", "https://mirror.example/simple") in pairs
    assert [v for f, v in pairs if f == "--extra-index-url"] == ["file:///a/simple", "file:///b/simple"]
    assert [v for f, v in pairs if f == "--find-links"] == ["/wheels/two", "/wheels/three"]
    assert ("--constraint", "/c.txt") in pairs and ("--allow-insecure-host", "mirror.example") in pairs
    assert env == {"SSL_CERT_FILE": "/ca.pem"}


def test_a_setting_uv_is_not_handed_sends_the_install_to_pip(tmp_path):
    listing = pip_listing(tmp_path, "[global]\nonly-binary = :all:\n", {})
    assert install_venv.pip_settings(listing)["only-binary"] == ":all:"
    assert install_venv.uv_options(install_venv.pip_settings(listing)) is None
    assert install_venv.uv_options({"no-index": "true", "timeout": "5"}) == (["--no-index"], {})
