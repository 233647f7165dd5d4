#!/usr/bin/env bash
# Builds the gpushare product image (gpushare-extender, gpushare-device-plugin and
# kubectl-inspect-gpushare) from Debian 12
# packages on this machine, without a container registry:
#
#   1. the binaries, from --build-dir; by default build-image/ is configured (Release, no tests)
#      and built here, so a developer's build/ is left alone;
#   2. their runtime libraries, found with ldd and `dpkg -S` on the binaries themselves (so the
#      list cannot go stale), made into a minimal root file system by
#      `mmdebstrap --variant=extract` from the Debian mirror (about 15 MB of packages);
#   3. the image from Containerfile (FROM scratch) with podman, else buildah, else docker (only
#      when its daemon answers), tagged localhost/gpushare-extender:VERSION (what deploy/base points at); VERSION is
#      CMakeLists.txt's. With no image builder, it leaves the root file system with the binaries
#      as a tarball to import elsewhere, and says so.
#
# --check then makes sure that every binary in the image starts and prints that version: with
# `podman run` (or docker run) where containers can run, else by chroot into the image's
# exported file system (unshare -r chroot when not root). It fails if neither is possible.
#
#   scripts/build-image.sh [--build-dir DIR] [--tag NAME] [--save FILE] [--check]
#                          [--builder podman|buildah|docker|none] [--mirror URL]
#
#   --builder none  writes ./gpushare-extender-VERSION-rootfs.tar instead of an image
#   --save FILE   also write the image as an OCI archive (docker: docker-archive), for
#                 `kind load image-archive FILE` or `ctr -n k8s.io images import FILE`
#   --mirror URL  Debian mirror (default http://deb.debian.org/debian, with bookworm-updates and
#                 bookworm-security)
#   $GPUSHARE_PODMAN_ARGS  extra podman/buildah global options, e.g. a private store:
#                 "--root /tmp/store --runroot /tmp/run --storage-driver vfs"
#
# Missing Debian packages (mmdebstrap, and podman unless another builder is chosen) are installed
# with apt-get, as the other scripts do. Takes 20-60 s with built binaries (docs/install.md).
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
# Paths given on the command line, and the output, are relative to where the script was started.
absolute() { if [[ "$1" == /* ]]; then echo "$1"; else echo "$caller/$1"; fi; }

build_dir=""
tag=""
save=""
check=0
builder="${GPUSHARE_IMAGE_BUILDER:-}"
mirror="http://deb.debian.org/debian"
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$(absolute "$2"); shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --save) save=$(absolute "$2"); shift 2 ;;
    --check) check=1; shift ;;
    --builder) builder="$2"; shift 2 ;;
    --mirror) mirror="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "build-image: $*" >&2; }
die() { say "$*"; exit 1; }
started=$SECONDS

version=$(sed -n 's/^project(gpushare VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
[[ -n "$version" ]] || die "no version in CMakeLists.txt"
tag="${tag:-localhost/gpushare-extender:$version}"
binaries=(gpushare-extender gpushare-device-plugin kubectl-inspect-gpushare)

[[ -r /etc/debian_version ]] || die "needs a Debian 12 host: the image is made of this machine's Debian packages"
packages=(mmdebstrap binutils)
if [[ -z "$builder" ]]; then
  # docker counts only when its daemon answers: a client alone (common on CI runners) cannot build.
  for candidate in podman buildah docker; do
    command -v "$candidate" >/dev/null || continue
    if [[ "$candidate" == docker ]] && ! timeout 20 docker info >/dev/null 2>&1; then continue; fi
    builder=$candidate
    break
  done
  if [[ -z "$builder" ]]; then builder=podman; packages+=(podman); fi
fi
case "$builder" in
  podman|buildah) command -v "$builder" >/dev/null || packages+=("$builder") ;;
  docker) command -v docker >/dev/null || die "--builder docker: docker is not installed" ;;
  none) ;;
  *) die "--builder must be podman, buildah, docker or none" ;;
esac
scripts/apt-install-missing.sh "to build the container image" "${packages[@]}"

# 1. The binaries.
if [[ -z "$build_dir" ]]; then
  build_dir=build-image
  say "building the binaries in $build_dir/ (Release)"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_TESTS=OFF \
    -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build_dir" -j "${GPUSHARE_JOBS:-$(nproc)}" --target "${binaries[@]}" >/dev/null
fi
for binary in "${binaries[@]}"; do
  [[ -x "$build_dir/$binary" ]] || die "$build_dir/$binary is missing: build it first"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-image.XXXXXX")
cleanup() {
  # The chroot check's copy may hold files another user namespace created.
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/context/bin"
for binary in "${binaries[@]}"; do
  strip --strip-unneeded -o "$work/context/bin/$binary" "$build_dir/$binary"
done
cp Containerfile "$work/context/"

# 2. The packages holding every shared library the binaries load, as this machine resolves them.
runtime=()
while read -r library; do
  owner=$(dpkg -S "$library" 2>/dev/null || dpkg -S "$(readlink -f "$library")" 2>/dev/null ||
          dpkg -S "/usr$library" 2>/dev/null || true)
  [[ -n "$owner" ]] || die "no Debian package holds $library"
  runtime+=("${owner%%:*}")
done < <(for binary in "${binaries[@]}"; do
  ldd "$work/context/bin/$binary" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'
done | sort -u)
mapfile -t runtime < <(printf '%s\n' "${runtime[@]}" ca-certificates | sort -u)
say "runtime packages: ${runtime[*]}"

security="${mirror%/debian}/debian-security"
[[ "$mirror" == */debian ]] || security=""
sources=("deb $mirror bookworm main" "deb $mirror bookworm-updates main")
[[ -n "$security" ]] && sources+=("deb $security bookworm-security main")
# extract: the packages' files only, no maintainer scripts (there is no shell in the image to
# run them), so the hook does what ca-certificates' script would: one CA bundle.
mmdebstrap --quiet --variant=extract --mode=auto --format=tar \
  --include="$(IFS=,; echo "${runtime[*]}")" \
  --customize-hook='mkdir -p "$1/etc/ssl/certs" "$1/tmp" && chmod 1777 "$1/tmp"' \
  --customize-hook='cat "$1"/usr/share/ca-certificates/mozilla/*.crt > "$1/etc/ssl/certs/ca-certificates.crt"' \
  --customize-hook='printf "root:x:0:0:root:/root:/usr/sbin/nologin\ngpushare:x:65532:65532:gpushare:/nonexistent:/usr/sbin/nologin\n" > "$1/etc/passwd"' \
  --customize-hook='printf "root:x:0:\ngpushare:x:65532:\n" > "$1/etc/group"' \
  --customize-hook='rm -rf "$1/usr/share/doc" "$1/usr/share/man" "$1/usr/share/lintian" "$1/usr/share/locale" "$1/var/lib/apt" "$1/var/cache"' \
  bookworm "$work/context/rootfs.tar" "${sources[@]}" ||
  die "mmdebstrap failed (is $mirror reachable? --mirror URL chooses another)"

# 3. The image.
podman_args=()
read -r -a podman_args <<<"${GPUSHARE_PODMAN_ARGS:-}"
case "$builder" in
  podman) podman "${podman_args[@]}" build --quiet --build-arg "VERSION=$version" -t "$tag" "$work/context" >/dev/null ;;
  buildah) buildah "${podman_args[@]}" bud --quiet --build-arg "VERSION=$version" -t "$tag" "$work/context" >/dev/null ;;
  docker) docker build --quiet --build-arg "VERSION=$version" -t "$tag" \
    -f "$work/context/Containerfile" "$work/context" >/dev/null ;;
  none)
    tarball="$caller/gpushare-extender-$version-rootfs.tar"
    cp "$work/context/rootfs.tar" "$tarball"
    tar --append --file "$tarball" --owner=0 --group=0 -C "$work/context" \
      --transform 's,^bin/,usr/local/bin/,' "${binaries[@]/#/bin/}"
    say "no image builder (--builder none): wrote $tarball, the image's file system. Import it with"
    say "  podman import --change 'USER=65532:65532' --change 'ENTRYPOINT=[\"/usr/local/bin/gpushare-extender\"]' $tarball $tag"
    ;;
esac
[[ "$builder" == none ]] || say "built $tag with $builder"

if [[ -n "$save" ]]; then
  case "$builder" in
    podman) podman "${podman_args[@]}" save --quiet --format oci-archive -o "$save" "$tag" ;;
    buildah) buildah "${podman_args[@]}" push --quiet "$tag" "oci-archive:$save:$tag" ;;
    docker) docker save -o "$save" "$tag" ;;
    none) die "--save needs an image builder" ;;
  esac
  say "saved $tag to $save"
fi

# --check: every binary in the image prints this version.
expect_version() {  # NAME OUTPUT
  [[ "$2" == "gpushare $version"* ]] || die "$1 --version printed \"$2\", want gpushare $version"
  say "in the image: $1 --version: $2"
}
if ((check)); then
  runner=""
  case "$builder" in
    podman) runner="podman ${podman_args[*]}" ;;
    docker) runner="docker" ;;
  esac
  ran=0
  if [[ -n "$runner" ]] && output=$($runner run --rm --network=none "$tag" --version 2>"$work/run.err"); then
    expect_version gpushare-extender "$output"
    for binary in gpushare-device-plugin kubectl-inspect-gpushare; do
      output=$($runner run --rm --network=none --entrypoint "/usr/local/bin/$binary" "$tag" --version)
      expect_version "$binary" "$output"
    done
    ran=1
  elif [[ -n "$runner" ]]; then
    say "cannot run containers here ($(tail -1 "$work/run.err")); checking the image's file system with chroot instead"
  fi
  if ((!ran)); then
    mkdir "$work/fs"
    case "$builder" in
      podman|docker)
        container=$($runner create "$tag")
        $runner export "$container" | tar -x -C "$work/fs" 2>/dev/null
        $runner rm "$container" >/dev/null ;;
      buildah)
        container=$(buildah "${podman_args[@]}" from "$tag")
        tar -c -C "$(buildah "${podman_args[@]}" mount "$container")" . | tar -x -C "$work/fs"
        buildah "${podman_args[@]}" rm "$container" >/dev/null ;;
      none) tar -x -f "$tarball" -C "$work/fs" 2>/dev/null ;;
    esac
    enter=(chroot "$work/fs")
    if [[ $(id -u) -ne 0 ]]; then enter=(unshare -r chroot "$work/fs"); fi
    for binary in "${binaries[@]}"; do
      output=$("${enter[@]}" "/usr/local/bin/$binary" --version) ||
        die "cannot run /usr/local/bin/$binary in the image's file system (chroot not permitted here?)"
      expect_version "$binary" "$output"
    done
  fi
fi
say "done in $((SECONDS - started)) s"
