/*
 * bcryptprimitives.dll for Wine 8, which lacks it: Rust's standard library (1.78 and later)
 * takes its random bytes from ProcessPrng in this DLL on Windows 10 and later, so every Rust
 * program built for x86_64-pc-windows-gnu fails to start under Wine 8 without it. This one
 * exports ProcessPrng alone, answered by RtlGenRandom (advapi32's SystemFunction036), which
 * Wine has. Built by scripts/platforms/windows.sh into the Wine prefix the tests run in; never
 * shipped (real Windows has its own).
 */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
