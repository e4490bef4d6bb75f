/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_target.h - AMDGPU target IDs: parsing, ELF e_flags decoding, compatibility.
 *
 * Role: decide whether a code object can run on an agent.  A target ID is a processor plus the
 * state of the two target features an image may depend on, xnack and sramecc
 * ("gfx90a", "gfx90a:xnack+", "gfx90a:sramecc-:xnack+").  An agent reports its ISA name with the
 * features it supports in their current state ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"); an
 * image states each feature as on, off or any (the feature is not named: the code works either
 * way).
 *
 * The rule (LLVM's AMDGPU target ID rule): an image runs on an agent when the processors are
 * equal and every feature the image sets to on or off is supported by the agent in that same
 * state.  A feature that the image leaves as any (or that its processor does not support) matches
 * anything.
 *
 * The e_flags decoding covers code objects v2-v5 (EI_ABIVERSION 0-3) and the processors LLVM 16
 * knows; each EF_AMDGPU_MACH value below was checked against e_flags of objects produced by
 * clang-16 for that processor.  An unknown value is TETHER_ERR_NOT_FOUND (callers then use the
 * amdhsa.target string of the metadata note).
 *
 * Everything here is pure: no state, any thread.
 */
#ifndef TETHER_AMDGPU_TARGET_H
#define TETHER_AMDGPU_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/status.h"

enum amdgpu_feature {
    AMDGPU_FEATURE_ANY = 0, /* not named: unspecified (image) or not supported (agent) */
    AMDGPU_FEATURE_OFF,
    AMDGPU_FEATURE_ON,
};

#define AMDGPU_PROCESSOR_MAX 16

struct amdgpu_target_id {
    char processor[AMDGPU_PROCESSOR_MAX]; /* "gfx90a"; NUL-terminated */
    enum amdgpu_feature sramecc;
    enum amdgpu_feature xnack;
};

/* Parse a target ID or an agent ISA name.  Accepted forms: "gfx90a", "gfx90a:xnack+:sramecc-"
 * (features in any order, each at most once), and the same after an "amdgcn-amd-amdhsa-<env>-"
 * prefix ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").  The processor is "gfx" followed by
 * hexadecimal digits.  Returns TETHER_ERR_INVALID for anything else (an unknown feature, a
 * repeated feature, a missing +/-, a too long name). */
tether_status_t amdgpu_target_id_parse(const char *text, struct amdgpu_target_id *id_p);

/* Decode the target ID of a code object from its ELF header fields.
 *   abi_version: e_ident[EI_ABIVERSION]; e_flags: the header's e_flags.
 * Code object v2/v3 (abi 0/1) have one bit per feature: set is on, clear is any.  v4/v5 (abi 2/3)
 * have two bits per feature: unsupported or any -> any, off, on.  TETHER_ERR_NOT_FOUND when the
 * EF_AMDGPU_MACH field names no processor this table knows; TETHER_ERR_INVALID for an ABI
 * version above v5. */
tether_status_t amdgpu_target_id_from_elf(uint8_t abi_version, uint32_t e_flags,
                                          struct amdgpu_target_id *id_p);

/* The processor name of an EF_AMDGPU_MACH value (e_flags & 0xff), or NULL. */
const char *amdgpu_target_mach_name(uint32_t mach);

/* True when code built for image can run on agent (the rule in the header comment). */
bool amdgpu_target_id_compatible(const struct amdgpu_target_id *image,
                                 const struct amdgpu_target_id *agent);

/* Write the canonical text ("gfx90a:sramecc+:xnack-": features in alphabetical order, only the
 * ones that are on or off) into buf, truncated to size bytes and always NUL-terminated when size
 * is not 0.  Returns the length the full text has (snprintf style). */
size_t amdgpu_target_id_format(const struct amdgpu_target_id *id, char *buf, size_t size);

#endif /* TETHER_AMDGPU_TARGET_H */
