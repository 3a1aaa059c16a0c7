# gpu/sage/cutlass-inc.sh -- sourced by the device scripts that build CuTe programs
# (device-wgmma.sh, device-fa3.sh): kvq_cutlass_inc sets `inc` to the CUTLASS/CuTe include
# folder -- $CUTLASS_INC if given, else the headers unpacked from the carried wheel
# $WHL_NAME (found as $CUTLASS_WHEEL or under build/deps, .devcarry, .), else an installed
# cutlass_library -- and returns 2 (after `say`ing why) when there is none.  The caller
# defines `say` and WHL_NAME.
kvq_cutlass_inc() {
    inc=${CUTLASS_INC:-}
    if [ -z "$inc" ]; then
        local whl=${CUTLASS_WHEEL:-}
        [ -n "$whl" ] && [ -f "$whl" ] || whl=$(find -L build/deps .devcarry . -maxdepth 6 -name "$WHL_NAME" -print -quit 2>/dev/null)
        if [ -n "$whl" ] && [ -f "$whl" ]; then
            mkdir -p build/deps/cutlass
            python3 - "$whl" build/deps/cutlass <<'PYEOF' || unzip -q -o "$whl" 'cutlass_library/source/include/*' -d build/deps/cutlass
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("cutlass_library/source/include/")])
PYEOF
            inc=$PWD/build/deps/cutlass/cutlass_library/source/include
            say "CUTLASS headers from $whl"
        else
            inc=$(python3 -c 'import importlib.util as u, os; s = u.find_spec("cutlass_library"); print(os.path.join(os.path.dirname(s.origin), "source", "include") if s else "")' 2>/dev/null)
            [ -n "$inc" ] && say "CUTLASS headers from the installed cutlass_library"
        fi
    fi
    if [ -z "$inc" ] || [ ! -f "$inc/cute/tensor.hpp" ]; then
        say "error: no CUTLASS/CuTe headers (no $WHL_NAME under build/deps or .devcarry, no cutlass_library)"
        return 2
    fi
}
