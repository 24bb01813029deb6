#!/usr/bin/env bash
# Installed layout, end to end: `cmake --install` into a fresh temporary prefix, then, from a directory outside the
# source and build trees with no DYLLM_* variable set, P/bin/dyllm finds the built-in model and task suites under
# P/share/dyllm-studio (the JSON names the directory it loaded) and P/bin/dyllm-studio writes a screenshot under
# xvfb-run (exit 77 = ctest skip for that part alone when xvfb-run is absent).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR VERSION
set -euo pipefail
build=$1 src=$(realpath "$2") version=$3

fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

# Outside both trees (mktemp's /tmp), and canonical so it compares equal to the paths the programs print.
prefix=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/dyllm-prefix.XXXXXX")")
work=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/dyllm-cwd.XXXXXX")")
trap 'rm -rf "$prefix" "$work"' EXIT
case "$prefix/" in
    "$src/"* | "$(realpath "$build")/"*) fail "temporary prefix $prefix is inside the source or build tree" ;;
esac

cmake --install "$build" --prefix "$prefix" > "$work/install.log" || {
    cat "$work/install.log"; fail "cmake --install"; }

share=$prefix/share/dyllm-studio
[[ -x $prefix/bin/dyllm ]] || fail "bin/dyllm missing from the installed prefix"
for f in models/tiny-llada/config.json models/tiny-llada/model.safetensors models/tiny-dream/config.json \
         tasks/sort.jsonl; do
    [[ -e $share/$f ]] || fail "share/dyllm-studio/$f missing from the installed prefix"
done
[[ -L $share/fonts/DejaVuSans.ttf ]] || fail "share/dyllm-studio/fonts/DejaVuSans.ttf (link to the system font) missing"
# Nothing installed may point back into the source tree (a symlinked asset would defeat the point).
if find "$prefix" -type l -lname "$src/*" | grep -q .; then fail "installed links into the source tree"; fi

# Every run: from the scratch directory, with the lookup's environment overrides removed.
run() { (cd "$work" && env -u DYLLM_MODELS_DIR -u DYLLM_SOURCE_DIR -u DYLLM_CLI -u DYLLM_STUDIO "$@"); }

out=$(run "$prefix/bin/dyllm" --version) || fail "dyllm --version exited $?"
[[ $out == "dyllm $version" ]] || fail "dyllm --version printed '$out', expected 'dyllm $version'"

# The built-in model by default name; the sort task's answer is deterministic (fixed seed) for this trained model.
json=$(run "$prefix/bin/dyllm" generate -p "Q: sort 5 2 9 1 7" --json) || fail "dyllm generate exited $?"
dir=$(grep -o '"model_dir": *"[^"]*"' <<<"$json" | sed 's/.*: *"//; s/"$//')
[[ $dir == "$share/models/tiny-llada" ]] || fail "dyllm loaded the model from '$dir', expected $share/models/tiny-llada"
grep -q '"text": *"[^"]*1 2 5 7 9' <<<"$json" || fail "dyllm generate did not sort: $json"

# Task suites from the share directory: eval fails with "no task directory found" otherwise.
run "$prefix/bin/dyllm" eval -m tiny-dream --task sort --limit 2 > "$work/eval.txt" 2>&1 || {
    cat "$work/eval.txt"; fail "dyllm eval from the installed prefix"; }
echo "install_test: dyllm OK (model from $dir)"

[[ -x $prefix/bin/dyllm-studio ]] || { echo "install_test: dyllm-studio was not built: skipping its part"; exit 77; }
for f in applications/dyllm-studio.desktop icons/hicolor/scalable/apps/dyllm-studio.svg \
         icons/hicolor/256x256/apps/dyllm-studio.png; do
    [[ -e $prefix/share/$f ]] || fail "share/$f missing from the installed prefix"
done
grep -q '^Exec=dyllm-studio$' "$prefix/share/applications/dyllm-studio.desktop" || fail "desktop entry Exec line"
out=$(run "$prefix/bin/dyllm-studio" --version) || fail "dyllm-studio --version exited $?"
[[ $out == "dyllm-studio $version" ]] || fail "dyllm-studio --version printed '$out', expected 'dyllm-studio $version'"

command -v xvfb-run > /dev/null || { echo "install_test: no xvfb-run: skipping the dyllm-studio screenshot"; exit 77; }
run xvfb-run -a "$prefix/bin/dyllm-studio" --screenshot "$work/shot.png" --frames 10 --step 5 \
    > "$work/studio.out" 2> "$work/studio.err" || {
    cat "$work/studio.out" "$work/studio.err"; fail "dyllm-studio exited"; }
# rc 0 already means the model loaded and ran (a failed load exits 2); the message bar catches any other error.
grep -q "wrote $work/shot.png (1600x1000) at step 5" "$work/studio.out" || fail "studio: $(cat "$work/studio.out")"
if grep -q "message bar" "$work/studio.err"; then fail "studio showed an error: $(cat "$work/studio.err")"; fi
[[ $(head -c 8 "$work/shot.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "shot.png is not a PNG"
# A blank 1600x1000 frame compresses to a few KB; the populated window is well over 100 KB (measured ~250 KB).
size=$(stat -c %s "$work/shot.png")
(( size > 50000 )) || fail "shot.png is only $size bytes: the window looks empty"
echo "install_test: dyllm-studio OK (screenshot $size bytes)"
