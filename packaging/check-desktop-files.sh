#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the desktop integration files of data/ as a desktop would use them:
#   - the desktop entry with desktop-file-validate, the metainfo with appstreamcli validate;
#   - the MIME types by real sniffing: a private MIME database (freedesktop's types plus ours) and
#     GIO's content-type guess on files written by real torch and Hugging Face (tests/fixtures),
#     under the names people give them (.tar, no extension, index files), and on look-alikes that
#     must keep their own type (a plain tar, a plain zip, config.json).
# Exits 77 (skip) when a tool is missing: desktop-file-utils, appstream, shared-mime-info, gio.
#
#   check-desktop-files.sh DATA_DIR FIXTURES_DIR
set -euo pipefail

data=${1:?DATA_DIR}
fixtures=${2:?FIXTURES_DIR}
corpus="$(dirname "$0")/../../shared/corpus/files" # optional: legacy tar-format checkpoints

for tool in desktop-file-validate appstreamcli update-mime-database gio; do
    command -v "$tool" >/dev/null || {
        echo "skip: $tool is not installed (packaging/install-deps.sh)"
        exit 77
    }
done
[[ -r /usr/share/mime/packages/freedesktop.org.xml ]] || {
    echo "skip: shared-mime-info's freedesktop.org.xml is not installed"
    exit 77
}

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

desktop=$(ls "$data"/*.desktop)
metainfo=$(ls "$data"/*.metainfo.xml)
desktop-file-validate "$desktop" && echo "ok: desktop-file-validate $(basename "$desktop")" ||
    fail "desktop-file-validate $desktop"
appstreamcli validate --no-net "$metainfo" && echo "ok: appstreamcli validate $(basename "$metainfo")" ||
    fail "appstreamcli validate $metainfo"

# The metainfo must launch the desktop entry and list the MIME types it opens.
grep -q "<launchable type=\"desktop-id\">$(basename "$desktop")</launchable>" "$metainfo" ||
    fail "$metainfo does not launch $(basename "$desktop")"
for type in $(sed -n 's/^MimeType=//p' "$desktop" | tr ';' ' '); do
    grep -q "<mime-type type=\"$type\">" "$data/mime/ckpt-inspector.xml" ||
        fail "$desktop opens $type, which data/mime/ckpt-inspector.xml does not define"
    grep -q "<mediatype>$type</mediatype>" "$metainfo" || fail "$metainfo does not provide $type"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/share/mime/packages" "$work/home" "$work/files"
cp /usr/share/mime/packages/freedesktop.org.xml "$data/mime/ckpt-inspector.xml" "$work/share/mime/packages/"
XDG_DATA_DIRS="$work/share" update-mime-database "$work/share/mime"

content_type() {
    XDG_DATA_DIRS="$work/share" XDG_DATA_HOME="$work/home" \
        gio info -a standard::content-type "$1" | sed -n 's/^ *standard::content-type: //p'
}
expect() { # expect FILE TYPE
    local got
    got=$(content_type "$1")
    if [[ "$got" == "$2" ]]; then
        echo "ok: $(basename "$1") is $2"
    else
        fail "$(basename "$1") is '$got', expected $2"
    fi
}

f="$work/files"
zip_torch="$fixtures/torch-2/devices_cuda0.pt"  # torch 2.x zip format
legacy_torch="$fixtures/torch-1.13/legacy_state_dict.pt" # torch 1.13, _use_new_zipfile_serialization=False
safetensors="$fixtures/sharded/safetensors/model-00001-of-00003.safetensors"
cp "$zip_torch" "$f/model.pt"
cp "$zip_torch" "$f/model.pth"
cp "$zip_torch" "$f/last.ckpt"
cp "$zip_torch" "$f/checkpoint.pth.tar"
cp "$zip_torch" "$f/checkpoint.tar"    # a torch zip under tar's name: the bytes decide
cp "$legacy_torch" "$f/legacy.tar"     # the same for the legacy pickle format
cp "$zip_torch" "$f/model.bin"         # .bin names many formats: the bytes decide
cp "$legacy_torch" "$f/legacy.bin"
cp "$zip_torch" "$f/zip-no-extension"  # no name to go by at all
cp "$legacy_torch" "$f/legacy-no-extension"
cp "$fixtures/sharded/bin_cpu/pytorch_model-00001-of-00003.bin" "$f/"
cp "$safetensors" "$f/"
cp "$safetensors" "$f/safetensors-no-extension"
cp "$fixtures/sharded/safetensors/model.safetensors.index.json" "$f/"
cp "$fixtures/sharded/bin_cpu/pytorch_model.bin.index.json" "$f/"
cp "$fixtures/sharded/safetensors/config.json" "$f/"
(cd "$f" && tar -cf plain.tar config.json && python3 -c 'import zipfile; zipfile.ZipFile("plain.zip", "w").write("config.json")')

for name in model.pt model.pth last.ckpt checkpoint.pth.tar checkpoint.tar legacy.tar model.bin legacy.bin zip-no-extension \
    legacy-no-extension pytorch_model-00001-of-00003.bin; do
    expect "$f/$name" application/x-pytorch-checkpoint
done
expect "$f/model-00001-of-00003.safetensors" application/x-safetensors
expect "$f/safetensors-no-extension" application/x-safetensors
expect "$f/model.safetensors.index.json" application/x-pytorch-checkpoint-index
expect "$f/pytorch_model.bin.index.json" application/x-pytorch-checkpoint-index
expect "$f/config.json" application/json
expect "$f/plain.tar" application/x-tar
expect "$f/plain.zip" application/zip

# torch 0.1-0.3's tar format, when real ones are at hand (only sniffed here, never unpickled).
legacy_tar=$(grep -l --null -m1 -a '^sys_info' "$corpus"/*.tar 2>/dev/null | head -zn1 | tr -d '\0' || true)
if [[ -n "$legacy_tar" ]]; then
    cp "$legacy_tar" "$f/old-format.tar"
    expect "$f/old-format.tar" application/x-pytorch-checkpoint-tar
else
    echo "note: no tar-format checkpoint in $corpus; that rule is not checked"
fi

if ((failures)); then
    echo "check-desktop-files: $failures failure(s)"
    exit 1
fi
echo "check-desktop-files: all passed"
