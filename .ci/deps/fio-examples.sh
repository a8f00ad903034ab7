#!/usr/bin/env bash
# fio's own example job files (Debian's fio-examples package): the fio
# import is tested against every block-engine example among them
# (crates/lab/tests/fio_examples.rs).
set -euo pipefail
if [ ! -d /usr/share/doc/fio/examples ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio-examples >/dev/null
fi
ls /usr/share/doc/fio/examples | grep -c '\.fio$'
