# SPDX-License-Identifier: MIT
"""Issue 24, "other readers pick other bytes" and "files that are two formats at once": one file per
disagreement the container differential (tests/tools/container_differential.py) found between this
tool's verdict and a real reader (torch's miniz reader in 1.13 and 2.x, Python's zipfile and tarfile,
numpy's header reader), built with the differential's own builders. Each holds an os.system marker
that some real reader would hand to an unpickler; the verdict must rate it dangerous and name
os.system (an encrypted member: "cannot verify", naming why)."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import container_differential as cd  # noqa: E402


def generate(h):
    scratch = os.path.join(h.OUT, ".containers-scratch")
    os.makedirs(scratch, exist_ok=True)
    bases = cd.Bases(scratch)

    def add(name, build, techniques, names=("os.system",)):
        cd.MARKER = h.marker(name)
        h.write(name, build(), techniques, list(names))

    def zip_case(kind, seed=0):
        return lambda: cd.case_zip(bases, random.Random(seed), kind)[1]

    # zip: which directory, which name
    add("c01_miniz_directory_offset.pt", zip_case("miniz-cd", 1), "5,7")
    add("c01_miniz_directory_offset_b.pt", zip_case("miniz-cd", 2), "5,7")
    add("c02_zip64_record_at_locator_offset.pt", zip_case("zip64-miniz"), "5,7")
    add("c03_zip64_record_before_locator.pt", zip_case("zip64-python"), "5,7")
    add("c04_directory_count_lies.pt", lambda: _count_lie(bases), "5,6")
    add("c05_data_pkl_upper_case.pt", zip_case("case"), "2,6")
    add("c06_nul_in_member_name.pt", zip_case("nul"), "2,5")
    add("c07_encrypted_data_pkl.pt", lambda: _encrypted(bases), "5,27", ())
    add("c08_member_global_attribute_not_a_name.pt", lambda: _attribute_not_a_name(bases), "2,5,12", ("os.",))
    # 0.1.x tar: Python's tarfile takes a v7 header; pickles behind storage bytes
    add("c10_v7_tar_pickle.pt", lambda: cd.tar_bytes(cd.legacy_tar("pickle", cd.payload(0)), v7_magic=True), "1,9")
    add("c11_tar_storage_views_broken.pt",
        lambda: cd.tar_bytes(cd.legacy_tar("storages-views", cd.payload(2))), "9,11")
    add("c13_tar_member_named_by_a_pickle.pt", lambda: cd.tar_bytes(
        [(cd.payload(0).decode("latin1"), b"")] + cd.legacy_tar("pickle", cd.payload(0)), cd.tarfile.PAX_FORMAT), "1,9")
    add("c12_tar_storage_args.pt", lambda: cd.tar_bytes(cd.legacy_tar("storages-args", cd.payload(2))), "9,11")
    # .npy/.npz: the object dtype spelled otherwise
    for i, descr in enumerate(["'|O8'", "'object'", "'\\x4f'", "[('a', '<f4'), ('b', '|O')]", "('O', (2,))",
                               "'f4,O'", "[(('t', 'a'), 'O')]"]):
        add("c20_npy_descr_%d.npy" % i, lambda descr=descr: cd.npy_with_descr(descr, cd.payload(0)), "16")
    add("c21_npy_version_3.npy", lambda: cd.npy_with_descr("'O'", cd.payload(0), version=3), "16")
    add("c22_npz_odd_member_name.npz",
        lambda: cd.finish(*cd.build_zip([cd.Entry("weights", cd.npy_with_descr("'|O'", cd.payload(0)), method=8)])[:3]),
        "16")
    # polyglots
    add("c30_safetensors_and_pickle.safetensors", lambda: cd.case_lookalike(bases, random.Random(0),
                                                                            "safetensors-pickle")[1], "1,14")
    add("c31_torch_package_source.pt", lambda: _torch_package(scratch), "8,37", ("mypkg.thing",))
    import shutil
    shutil.rmtree(scratch, ignore_errors=True)


def _count_lie(bases):
    for seed in range(200):
        name, blob = cd.case_zip(bases, random.Random(seed), "hidden-local")
        if name == "count_lie.pt":
            return blob
    raise RuntimeError("no seed gave the count lie")


def _attribute_not_a_name(bases):
    """Seed 1795820759, case 3249: an extra member, archive/data.txt (another name in its local
    header), holding a protocol-0 GLOBAL of 'os' whose attribute line is no name (NULs, spaces).
    torch's reader hands the member out; CPython's _pickle imports os before it fails on the
    attribute. The tool rated only data.pkl and called the file known inert."""
    entries = [cd.Entry(n, d) for n, d in bases.members]
    prefix = bases.members[0][0].split("/")[0]
    evil = b"cos\ns\x01stem\x00\x00\x00\x00" + cd.MARKER.encode() + b"'\ntR."
    entries.append(cd.Entry(prefix + "/data.txt", evil, local_name=prefix[:4].encode() + b"\xbeve/data#\x02\x00\x00"))
    return cd.finish(*cd.build_zip(entries)[:3])


def _encrypted(bases):
    entries = [cd.Entry(n, d) for n, d in bases.members]
    for e in entries:
        if e.name.endswith("data.pkl"):
            e.data, e.flags, e.encrypt = cd.payload(0), 0x1, True
    return cd.finish(*cd.build_zip(entries)[:3])


def _torch_package(scratch):
    """A torch.package archive (written by torch 1.13's PackageExporter) whose pickle names a module
    it ships: PackageImporter runs mypkg/thing.py, which here would call os.system."""
    import subprocess
    source = os.path.join(scratch, "pkgsrc", "mypkg")
    os.makedirs(source, exist_ok=True)
    with open(os.path.join(source, "__init__.py"), "w"):
        pass
    with open(os.path.join(source, "thing.py"), "w") as f:
        f.write("import os\nif __name__ != '__main__' and __package__ == '<never>':\n"
                "    os.system(%r)\n\nclass Thing:\n    pass\n" % cd.MARKER)
    out = os.path.join(scratch, "package.pt")
    subprocess.run([sys.executable, "-c",
                    "import sys; sys.path.insert(0, %r)\n"
                    "from torch.package import PackageExporter\n"
                    "from mypkg.thing import Thing\n"
                    "with PackageExporter(%r) as e:\n"
                    "    e.intern('mypkg.**')\n"
                    "    e.save_pickle('model', 'model.pkl', Thing())\n" % (os.path.dirname(source), out)],
                   check=True)
    with open(out, "rb") as f:
        return f.read()
