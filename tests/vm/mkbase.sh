#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the cached, test-independent part of the guest initramfs for one
# kernel: busybox, bash, the host's real tools with their libraries, and the
# kernel's own modules the tests need (decompressed, with dependencies).
#
#   tests/vm/mkbase.sh RELEASE MODROOT OUTDIR
#
# MODROOT holds lib/modules/RELEASE (/ for the Debian kernels).  Produces
# OUTDIR/root/ (the tree, kept for depmod at run time) and OUTDIR/base.cpio.
# Called by tests/vm/run, which decides when the cache is stale.
set -euo pipefail
rel=$1 modroot=$2 out=$3
root=$out/root.new
rm -rf "$root" "$out/base.cpio.new"
mkdir -p "$root"/usr/{bin,sbin,lib,lib64,local/bin,local/sbin} \
	"$root"/{dev,proc,sys,tmp,mnt,run,out,etc,root,var/tmp}
ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
ln -s /proc/mounts "$root/etc/mtab"

# Real tools (whichever the host has).  Busybox fills in the rest.
progs="bash fio losetup blockdev fallocate mkfs.ext4 mke2fs mkfs.ext2 mkfs.ext3
e2fsck fsck.ext4 tune2fs dumpe2fs debugfs resize2fs filefrag e2image
mkfs.xfs xfs_io xfs_repair xfs_db xfs_info xfs_admin xfs_growfs fsck.xfs
xfs_fsr e4defrag
dmsetup jq dd sha256sum sha1sum md5sum cmp stat truncate timeout tar gzip xz
kmod modprobe insmod rmmod lsmod modinfo depmod mount umount lsblk blkid
findmnt wipefs dmesg partx blkdiscard nsenter unshare taskset flock hexdump
od strace mawk awk sed grep find xargs ps pkill pgrep kill sync sleep seq
sort uniq wc head tail cut tr diff cp mv rm ln mkdir rmdir ls cat env date
uname chmod chown touch tee yes nproc ionice chrt setsid sysctl free top
vmstat mountpoint stdbuf realpath readlink basename dirname mktemp id fuser
ldconfig getconf sfdisk fdisk mkswap swapon swapoff fstrim split shuf
base64 numfmt expr test true false nice renice watch pidof du df ldd
mkfifo mknod sum cksum comm paste join fold tac rev script logger setpriv
fincore"
# More host tools for one-off runs (e.g. LOOPMQ_EXTRA_PROGS=perf: 48 MB).
progs="$progs ${LOOPMQ_EXTRA_PROGS:-}"
copy_file() {	# copy $1 (following symlinks) to the same canonical path in root
	local src=$1 dst
	dst=$(realpath "$(dirname "$src")")/$(basename "$src")
	[ -e "$root$dst" ] && return 0
	mkdir -p "$root$(dirname "$dst")"
	cp -L "$src" "$root$dst"
}
libs=()
for p in $progs; do
	path=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		command -v "$p" 2>/dev/null) || true
	case $path in /*) ;; *) echo "mkbase: no $p on host, skipped" >&2; continue;; esac
	copy_file "$path"
	if file -L "$path" 2>/dev/null | grep -q ELF || head -c4 "$path" | grep -q ELF; then
		while read -r lib; do libs+=("$lib"); done < <(ldd "$path" 2>/dev/null |
			awk '/=> \// { print $3 } /^\t\/.*\(0x/ { print $1 }')
	fi
done
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do copy_file "$lib"; done
# the dynamic loader under both names
copy_file /lib64/ld-linux-x86-64.so.2
[ -d /usr/lib/x86_64-linux-gnu/fio ] && cp -rL /usr/lib/x86_64-linux-gnu/fio "$root/usr/lib/x86_64-linux-gnu/"
cp -a /etc/ld.so.conf "$root/etc/" 2>/dev/null || true
cp -a /etc/ld.so.conf.d "$root/etc/" 2>/dev/null || true
ldconfig -r "$root" 2>/dev/null || echo "mkbase: ldconfig -r failed (ok, default paths)" >&2
ln -sf bash "$root/usr/bin/sh"

# busybox: an applet link only where no real tool of that name is on PATH
cp /bin/busybox "$root/usr/bin/busybox"
for a in $(/bin/busybox --list-full); do
	name=${a##*/}
	found=
	for d in usr/local/sbin usr/local/bin usr/sbin usr/bin; do
		[ -e "$root/$d/$name" ] && found=1
	done
	[ -n "$found" ] && continue
	case $a in sbin/*|usr/sbin/*) ln -s /usr/bin/busybox "$root/usr/sbin/$name";;
	*) ln -s /usr/bin/busybox "$root/usr/bin/$name";;
	esac
done

cat >"$root/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
P
cat >"$root/etc/group" <<'P'
root:x:0:
disk:x:6:
nogroup:x:65534:
P
echo loopmq-guest >"$root/etc/hostname"

# The kernel's modules the tests need, with their dependencies.
mods="loop brd null_blk configfs dm-mod dm-flakey dm-delay dm-zero dm-snapshot
dm-thin-pool dm-log-writes ext4 xfs virtio_blk virtio_pci virtio_ring virtio crc32c_generic
crc32c-intel libcrc32c crc16 crc32_generic ublk_drv nbd zram overlay
isofs squashfs fuse dm-multipath dm-round-robin"
mdir=$modroot/lib/modules/$rel
dst=$root/lib/modules/$rel
mkdir -p "$dst"
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$mdir/$f" ] && cp "$mdir/$f" "$dst/"
done
declare -A kos=()
for m in $mods; do
	while read -r ins ko _; do
		[ "$ins" = insmod ] && kos[$ko]=1
	done < <(modprobe -d "$modroot" -S "$rel" --show-depends "$m" 2>/dev/null || true)
done
for ko in "${!kos[@]}"; do
	relp=${ko#"$mdir"/}
	mkdir -p "$dst/$(dirname "$relp")"
	case $ko in
	*.ko.xz) xz -dc "$ko" >"$dst/${relp%.xz}";;
	*.ko.zst) zstd -qdc "$ko" >"$dst/${relp%.zst}";;
	*.ko.gz) gzip -dc "$ko" >"$dst/${relp%.gz}";;
	*) cp "$ko" "$dst/$relp";;
	esac
done
echo "mkbase: ${#kos[@]} kernel modules for $rel" >&2
depmod -b "$root" "$rel"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out/base.cpio.new"
rm -rf "$out/root"
mv "$root" "$out/root"
mv "$out/base.cpio.new" "$out/base.cpio"
echo "mkbase: $(du -sh "$out/base.cpio" | cut -f1) base initramfs for $rel" >&2
