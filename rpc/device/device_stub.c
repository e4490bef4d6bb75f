/*
 * rpc/device/device_stub.c - the host object of libtether-device.a.  It holds
 * no code: the device images are embedded in its .llvm.offloading section
 * (-Xclang -fembed-offload-object), where clang-linker-wrapper finds them.
 */
const char tether_device_library_version[] = "tether-device 1";
