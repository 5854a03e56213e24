# shellcheck shell=bash
# Small file systems of their own for the full-disk tests (sourced after
# tests/faults/lib.sh, not run): an ext4 image on a loop device, mounted under
# $W; every mount and loop device is undone at exit, pass or fail.
#
#   loop_fs NAME SIZE_MB     mounts a fresh ext4 (no reserved blocks) at $W/NAME
#   fill_fs DIR LEAVE_KB     one filler file, so that about LEAVE_KB stay free
#   free_kb DIR              what the file system of DIR has free, in KiB
#
# Needs root, losetup, mkfs.ext4 and mount: otherwise the test is skipped
# (exit 125), or fails under CI=true (scripts/setup.sh installs them).
loop_mounts=()
loop_devs=()
loop_cleanup() {
  local m d
  for m in "${loop_mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  for d in "${loop_devs[@]}"; do losetup -d "$d" 2>/dev/null; done
  loop_mounts=()
  loop_devs=()
}
trap 'loop_cleanup; finish' EXIT

loop_skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: ${test_name:-loopfs}: $1 (CI=true: the full-disk tests must run)"
    exit 1
  fi
  echo "${test_name:-loopfs}: skipped: $1"
  exit 125
}
[ "$(id -u)" -eq 0 ] || loop_skip "needs root (loop devices, mount)"
for tool in losetup mkfs.ext4 mount umount fallocate; do
  command -v "$tool" >/dev/null || loop_skip "$tool is not installed"
done

loop_fs() {
  local mb=$2 img=$W/$1.img mnt=$W/$1 dev
  truncate -s "${mb}M" "$img" && mkfs.ext4 -q -F -m 0 "$img" >/dev/null 2>&1 || loop_skip "mkfs.ext4 failed"
  dev=$(losetup -f --show "$img" 2>/dev/null) || loop_skip "no loop device (losetup -f)"
  loop_devs+=("$dev")
  mkdir -p "$mnt"
  mount "$dev" "$mnt" || loop_skip "mount $dev failed"
  loop_mounts+=("$mnt")
}

free_kb() { df -Pk "$1" | awk 'NR == 2 {print $4}'; }

fill_fs() {
  local dir=$1 leave=$2 have
  sync
  have=$(free_kb "$dir")
  [ "$have" -gt "$leave" ] || return 0
  fallocate -l "$(((have - leave) * 1024))" "$dir/filler.$RANDOM$RANDOM" || return 1
  sync
}
