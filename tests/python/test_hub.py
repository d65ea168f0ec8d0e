"""torch.hub: weights from a URL through the cache (file:// URLs: no network here), hash
checks, hubconf.py entry points from a local directory and from a GitHub archive (the
archive's URL pointed at a local zip)."""
import hashlib
import os
import zipfile

import pytest

import pytorchlite as torch


@pytest.fixture
def hub_dir(tmp_path):
    before = torch.hub._hub_dir
    torch.hub.set_dir(tmp_path / "hub")
    yield tmp_path / "hub"
    torch.hub._hub_dir = before


def _saved_state(tmp_path, name="weights.pt"):
    state = torch.nn.Linear(3, 2).state_dict()
    path = tmp_path / name
    torch.save(state, path)
    return state, path


def test_get_dir_follows_torch_home(monkeypatch):
    before = torch.hub._hub_dir
    torch.hub._hub_dir = None
    try:
        monkeypatch.setenv("TORCH_HOME", "/tmp/somewhere")
        assert torch.hub.get_dir() == "/tmp/somewhere/hub"
        monkeypatch.delenv("TORCH_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/cache")
        assert torch.hub.get_dir() == "/tmp/cache/torch/hub"
    finally:
        torch.hub._hub_dir = before


def test_load_state_dict_from_url_downloads_once(hub_dir, tmp_path, capsys):
    state, path = _saved_state(tmp_path)
    url = path.as_uri()
    got = torch.hub.load_state_dict_from_url(url, progress=False)
    assert sorted(got) == sorted(state) and torch.equal(got["weight"], state["weight"])
    cached = hub_dir / "checkpoints" / "weights.pt"
    assert cached.exists() and f'Downloading: "{url}" to {cached}' in capsys.readouterr().err
    path.unlink()   # the cache serves it now
    assert torch.equal(torch.hub.load_state_dict_from_url(url)["bias"], state["bias"])
    assert torch.utils.model_zoo.load_url is torch.hub.load_state_dict_from_url


def test_check_hash_uses_the_file_names_hex_part(hub_dir, tmp_path):
    _, path = _saved_state(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    good = tmp_path / f"w-{digest[:8]}.pt"
    bad = tmp_path / "w-deadbeef.pt"
    path.rename(good)
    bad.write_bytes(good.read_bytes())
    torch.hub.load_state_dict_from_url(good.as_uri(), check_hash=True, progress=False)
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef", got "'):
        torch.hub.load_state_dict_from_url(bad.as_uri(), check_hash=True, progress=False)
    assert not (hub_dir / "checkpoints" / bad.name).exists()
    assert sorted(os.listdir(hub_dir / "checkpoints")) == [good.name]


HUBCONF = '''
"""A test hub."""
dependencies = ["math"]


def tiny(out_features=2):
    """A Linear(3, out_features)."""
    import pytorchlite
    return pytorchlite.nn.Linear(3, out_features)


_private = 1
'''


def test_load_list_and_help_from_a_local_directory(tmp_path):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    model = torch.hub.load(str(tmp_path), "tiny", source="local", out_features=4)
    assert isinstance(model, torch.nn.Linear) and model.out_features == 4
    assert torch.hub.list(str(tmp_path), source="local") == ["tiny"]
    assert torch.hub.help(str(tmp_path), "tiny", source="local") == \
        "A Linear(3, out_features)."
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        torch.hub.load(str(tmp_path), "nope", source="local")
    with pytest.raises(ValueError, match='Unknown source: "svn"'):
        torch.hub.load(str(tmp_path), "tiny", source="svn")


def test_missing_dependencies_are_named(tmp_path):
    (tmp_path / "hubconf.py").write_text("dependencies = ['no_such_module_here']\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_here"):
        torch.hub.load(str(tmp_path), "x", source="local")


def test_a_github_repository_comes_from_its_archive(hub_dir, tmp_path, monkeypatch):
    archive = tmp_path / "repo.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("owner-repo-abc123/hubconf.py", HUBCONF)
    asked = []

    def archive_url(owner, name, ref):
        asked.append((owner, name, ref))
        return archive.as_uri()

    monkeypatch.setattr(torch.hub, "_archive_url", archive_url)
    model = torch.hub.load("owner/repo:v1", "tiny", verbose=False)
    assert isinstance(model, torch.nn.Linear) and asked == [("owner", "repo", "v1")]
    assert (hub_dir / "owner_repo_v1" / "hubconf.py").exists()
    assert torch.hub.list("owner/repo:v1") == ["tiny"] and len(asked) == 1   # the cache
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        torch.hub.load("not-a-repo", "tiny")
