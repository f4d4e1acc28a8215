#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 12-stacking: three levels, mixed filesystems, direct I/O at every level:
#   /dev/vda: ext4 -> f0 -> dev0 (bottom): ext4 -> f1 -> dev1 (middle):
#   xfs -> f2 -> dev2 (top): ext4 <- fsync-heavy fio with crc32c verify.
# In every mode (all levels in the same mode): no fio error or mismatch, no
# errors in any level's stats, and the guards must have fired where the
# mode would have gone inline: with direct I/O backing, a request that
# level K ran from queue_rq (inline, aio_inline or aio_async) submits its
# backing I/O to level K-1 from inside level K's dispatch, so level K-1 must
# show fallbacks (fb_nested, fb_journal, fb_stack or fb_reclaim).  In kthread
# mode nothing runs from queue_rq and no fallback is counted.
# ---- BEGIN lmq preamble (identical in every tests/guest/1x-3x script)
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The driver under test: loopmq, or the stock loop driver to validate the
# test itself (LMQ_DRIVER=loop in the environment, or lmq_driver=loop on
# the guest's kernel command line).  Same script, same ABI.
LMQ_DRIVER=${LMQ_DRIVER:-$(sed -n 's/.*lmq_driver=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null)}
LMQ_DRIVER=${LMQ_DRIVER:-loopmq}
if [ "$LMQ_DRIVER" = loop ]; then
	LMQ_MOD=loop LMQ_NAME=loop LMQ_CTL=/dev/loop-control
	LMQ_MODES=${LMQ_MODES:-stock}
else
	LMQ_MOD=loopmq LMQ_NAME=loopmq LMQ_CTL=/dev/loopmq-control
	LMQ_MODES=${LMQ_MODES:-direct kthread aio auto}
fi
LMQ_PREFIX=/dev/$LMQ_NAME
LOSETUP=$(command -v losetup)
. /tests/lib/tap.sh
# thin names over tap.sh (pass/fail/is/skip/diag/done_testing)
t_ok()   { pass "$*"; }
t_fail() { fail "$*"; }
t_skip() { skip "$1" "${2:-}"; }
t_diag() { diag "$*"; }
# t_is GOT WANT DESC: pass when GOT equals WANT (returns 1 otherwise).
t_is()   { if [ "$1" = "$2" ]; then pass "$3 ($1)"; else fail "$3" "got '$1', want '$2'"; fi; }
# t_run DESC CMD...: pass when CMD exits 0; its output is shown on failure.
t_run() {
	local d=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ]; then pass "$d"; else
		fail "$d" "exit $rc"; printf '%s\n' "$out" | tail -n 25 | sed 's/^/#   /'; fi
	return $rc
}
t_done() { done_testing; exit $?; }
lmq_is_mq()  { [ "$LMQ_DRIVER" != loop ]; }
lmq_dev()    { echo "$LMQ_PREFIX$1"; }
lmq_sys()    { echo "/sys/block/$LMQ_NAME$1"; }
# lmq_load NR [PARAM=V...]: load the driver with NR devices (max_part=,
# mode= are passed through; mode= is dropped for the stock driver).
lmq_load() {
	local nr=$1 p args=()
	shift
	for p in "$@"; do
		case $p in mode=*) lmq_is_mq && args+=("$p") ;; *) args+=("$p") ;; esac
	done
	if lmq_is_mq; then
		modprobe loopmq nr_devices="$nr" "${args[@]}" || return 1
	else
		modprobe loop max_loop="$nr" "${args[@]}" || return 1
	fi
	udevadm settle 2>/dev/null
	[ -b "$(lmq_dev $((nr - 1)))" ] && [ -c "$LMQ_CTL" ]
}
# lmq_detach_all: unbind every device of the driver under test.
lmq_detach_all() {
	local d
	for d in /sys/block/$LMQ_NAME[0-9]*; do
		[ -e "$d/loop/backing_file" ] || continue
		lmq-ioctl clr-fd "/dev/${d##*/}" >/dev/null 2>&1
	done
}
lmq_unload() { lmq_detach_all; sleep 0.2; modprobe -r "$LMQ_MOD" 2>/dev/null || rmmod "$LMQ_MOD"; }
# lmq_mode N MODE: switch device N's dispatch mode (no-op for stock loop).
lmq_mode() {
	lmq_is_mq || return 0
	echo "$2" >"$(lmq_sys "$1")/loopmq/mode" || return 1
	[ "$(cat "$(lmq_sys "$1")/loopmq/mode")" = "$2" ]
}
# lmq_stat N NAME: one counter of /sys/block/loopmqN/loopmq/stats.
lmq_stat() { awk -v k="$2" '$1 == k { print $2 }' "$(lmq_sys "$1")/loopmq/stats"; }
# lmq_wait_gone PATH [TENTHS]: wait for PATH to disappear.
lmq_wait_gone() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do [ -e "$1" ] || return 0; sleep 0.1; done
	return 1
}
require_cmd lmq-ioctl lmq-stats fio
t_diag "driver under test: $LMQ_DRIVER ($LMQ_PREFIX*), kernel $(uname -r)"
# ---- END lmq preamble

[ -b /dev/vda ] || skip_all "no /dev/vda"
M=/mnt/t12
mkdir -p $M/s0 $M/s1 $M/s2 $M/s3
lmq_load 3 || { t_fail "load $LMQ_MOD"; t_done; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1) D2=$(lmq_dev 2)
setup() {
	mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M/s0 && truncate -s 512M $M/s0/f0 &&
	$LOSETUP --direct-io=on $D0 $M/s0/f0 && mkfs.ext4 -q -F $D0 && mount $D0 $M/s1 &&
	truncate -s 320M $M/s1/f1 && $LOSETUP --direct-io=on $D1 $M/s1/f1 &&
	mkfs.xfs -q -f $D1 && mount $D1 $M/s2 && truncate -s 64M $M/s2/f2 &&
	$LOSETUP --direct-io=on $D2 $M/s2/f2 && mkfs.ext4 -q -F $D2 && mount $D2 $M/s3
}
t_run "build the 3-level stack (ext4 / xfs / ext4 on $LMQ_NAME)" setup || t_done
for i in 0 1 2; do t_is "$(cat $(lmq_sys $i)/loop/dio)" 1 "level $i: dio on"; done

st() { lmq_stat $1 $2; }
ran_from_queue_rq() { echo $(($(st $1 inline) + $(st $1 aio_inline) + $(st $1 aio_async))); }
guards() { echo $(($(st $1 fb_nested) + $(st $1 fb_journal) + $(st $1 fb_stack) + $(st $1 fb_reclaim))); }
fbs() { awk '$1 ~ /^fb_/ { s += $2 } END { print s + 0 }' $(lmq_sys $1)/loopmq/stats; }

for mode in $LMQ_MODES; do
	for i in 0 1 2; do lmq_mode $i $mode || t_fail "$mode: set mode on level $i"; done
	if lmq_is_mq; then for i in 0 1 2; do echo 0 >$(lmq_sys $i)/loopmq/stats; done; fi
	rm -rf $M/s3/fio; mkdir $M/s3/fio
	t_run "$mode: fsync-heavy verifying fio on the top filesystem" \
		fio --output-format=terse --directory=$M/s3/fio --name=fs --rw=randwrite --bs=4k \
		--size=2M --numjobs=2 --fsync=8 --verify=crc32c --do_verify=1 --verify_fatal=1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t_run "$mode: re-read after drop_caches verifies" \
		fio --output-format=terse --directory=$M/s3/fio --name=fs --rw=randwrite --bs=4k \
		--size=2M --numjobs=2 --verify=crc32c --verify_only=1 --verify_fatal=1
	lmq_is_mq || continue
	for i in 2 1 0; do
		t_diag "$mode level $i ($([ $i = 2 ] && echo top || { [ $i = 1 ] && echo middle || echo bottom; })): $(tr '\n' ' ' <$(lmq_sys $i)/loopmq/stats)"
		t_is "$(st $i errors)" 0 "$mode: level $i errors"
	done
	case $mode in
	kthread)
		for i in 0 1 2; do
			t_is "$(ran_from_queue_rq $i) $(fbs $i)" "0 0" "kthread: level $i ran nothing from queue_rq, no fallbacks"
		done ;;
	*)
		for k in 2 1; do
			r=$(ran_from_queue_rq $k) g=$(guards $((k - 1)))
			if [ "$r" -gt 0 ]; then
				[ "$g" -gt 0 ] && t_ok "$mode: level $k ran $r from queue_rq; level $((k - 1)) guards fired $g times" ||
					t_fail "$mode: level $k ran $r requests from queue_rq but level $((k - 1)) shows no nested/journal/stack/reclaim fallback"
			else
				t_diag "$mode: level $k ran nothing from queue_rq (all fell back)"
			fi
		done
		[ $(($(ran_from_queue_rq 0) + $(ran_from_queue_rq 1) + $(ran_from_queue_rq 2))) -gt 0 ] &&
			t_ok "$mode: some level ran requests from queue_rq" ||
			t_fail "$mode: no level ran anything from queue_rq" ;;
	esac
done
umount $M/s3 && $LOSETUP -d $D2 && umount $M/s2 && $LOSETUP -d $D1 && umount $M/s1 &&
	$LOSETUP -d $D0 && umount $M/s0
t_is "$?" 0 "tear the stack down"
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_done
