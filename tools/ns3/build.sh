#!/bin/sh
# Compile transfers.cc against Debian's ns-3 3.37 (apt-get install libns3-dev g++ pkg-config).
# Usage: tools/ns3/build.sh [OUTPUT]   (default: tools/ns3/build/transfers)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/build/transfers}
mods="ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control"
if ! pkg-config --exists $mods; then
    echo "build.sh: ns-3 not found by pkg-config; install it with:" >&2
    echo "  apt-get install -y libns3-dev g++ pkg-config" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
# Only the libraries from pkg-config: Debian's 3.37 .pc files carry a broken
# Cflags entry ("-I/usr;"), and the headers are in /usr/include/ns3 anyway.
# They also name /usr/lib/.../libgsl.so etc. by absolute path, which only the
# -dev packages provide; libns3-*.so already link those libraries, so drop the
# absolute paths that do not exist.
libs=""
for f in $(pkg-config --libs $mods); do
    case $f in
        /*) [ -e "$f" ] && libs="$libs $f" ;;
        *) libs="$libs $f" ;;
    esac
done
g++ -std=c++17 -O2 -Wall -o "$out" "$here/transfers.cc" $libs
echo "$out"
