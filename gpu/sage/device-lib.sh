# device-lib.sh -- what the SAGE device scripts (gpu/sage/device-{core,fa3,gqa,stg,vt}.sh) share;
# sourced after they set T0 (their start), OUT, COMMIT (KVQ_COMMIT or "unknown") and TAG (the
# script's name, which prefixes its summary lines).
#   say TEXT   a line into $OUT/summary.txt and stdout
#   el         seconds since T0
#   stamped F  F exists and was built at COMMIT: build/gpu/carried.commit (the stamp of the
#              carried build) and COMMIT are one hash and a prefix of it
say() { echo "$TAG: $*" | tee -a "$OUT/summary.txt"; }
el() { echo $(( $(date +%s) - T0 )); }
stamped() {
    local st
    st=$(cat build/gpu/carried.commit 2>/dev/null)
    [ -f "$1" ] && [ -n "$st" ] && [ "$COMMIT" != unknown ] &&
        { [ "${COMMIT#"$st"}" != "$COMMIT" ] || [ "${st#"$COMMIT"}" != "$st" ]; }
}
