/* Little-endian fields of on-disk and on-wire structures (ext superblocks,
 * RAID and LVM metadata, UEFI variables, NVMe log pages), read and written
 * byte by byte: no alignment assumed. */
#ifndef LE_H
#define LE_H

#include <stdint.h>

static inline uint64_t le_get(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void le_put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t) v;
}

#endif
