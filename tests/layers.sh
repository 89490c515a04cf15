#!/bin/sh
# The layers of src/ (doc/design.md): a file includes only from its own folder and the folders
# below it, so that the architecture `ls src` draws is the one the code has. Fails naming every
# include that runs up or sideways.
set -u
cd "${TOP_SRCDIR:-.}" || exit 99

# rank of a layer; observe and testlog are siblings and may not include each other
rank() {
    case "$1" in
    base) echo 0 ;;
    observe | testlog) echo 1 ;;
    profile) echo 2 ;;
    report) echo 3 ;;
    run) echo 4 ;;
    top) echo 5 ;;
    *) echo unknown ;;
    esac
}
layer_of() { # src/observe/x.c -> observe; src/testlog/formats/x.c -> testlog; src/main.c -> top
    p=${1#src/}
    case "$p" in */*) echo "${p%%/*}" ;; *) echo top ;; esac
}

bad=0 checked=0
for f in $(find src -name '*.[ch]' | sort); do
    from=$(layer_of "$f")
    rf=$(rank "$from")
    [ "$rf" = unknown ] && { echo "FAIL: $f is in no known layer"; bad=$((bad + 1)); continue; }
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
        case "$inc" in */*) ;; *) [ "$from" = top ] && continue; echo "FAIL: $f includes \"$inc\" without its layer"; bad=$((bad + 1)); continue ;; esac
        [ -f "src/$inc" ] || { echo "FAIL: $f includes \"$inc\", which is not under src/"; bad=$((bad + 1)); continue; }
        to=$(layer_of "src/$inc")
        rt=$(rank "$to")
        checked=$((checked + 1))
        [ "$to" = "$from" ] && continue
        if [ "$rt" -ge "$rf" ]; then
            echo "FAIL: $f ($from) includes $inc ($to): an arrow that runs up or sideways"
            bad=$((bad + 1))
        fi
    done
done
echo "layers: $checked includes checked, $bad against the layering"
[ "$checked" -gt 100 ] || { echo "FAIL: too few includes found ($checked): is the tree there?"; exit 1; }
[ "$bad" -eq 0 ]
