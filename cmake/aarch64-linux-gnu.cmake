# Cross-compiling for 64-bit Arm Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu) against the arm64 -dev packages of a multiarch
# install (dpkg --add-architecture arm64). Tests run under qemu-aarch64
# (qemu-user). Used by scripts/cross-aarch64.sh (make test-aarch64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: arm64 libraries live in /usr/lib/aarch64-linux-gnu, headers in
# /usr/include (shared with the host), the cross libc in /usr/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The arm64 libc of the multiarch install (/lib/aarch64-linux-gnu) serves
# the emulated binaries: with `-L /usr/aarch64-linux-gnu` (the cross
# toolchain's copy) qemu 7.2 hangs in the first pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
