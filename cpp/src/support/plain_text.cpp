#include "support/plain_text.h"

namespace stencil {

int plain_text_step(int state, uint8_t b) {
  enum { kBoundary, kNeed1, kNeed2, kNeed3, kAfterE0, kAfterED, kAfterF0, kAfterF4, kAfterE2, kAfterE280 };
  switch (state) {
    case kBoundary:
      // DEL is a control too: a JSON string spelling that escapes controls ("controls", as
      // llguidance writes strings) writes it \u007F, and its states must still admit plain text.
      if (b < 0x20 || b == 0x7F || b == '"' || b == '\\') return -1;
      if (b < 0x80) return kBoundary;
      if (b >= 0xC2 && b <= 0xDF) return kNeed1;
      if (b == 0xE0) return kAfterE0;
      if (b == 0xED) return kAfterED;
      if (b == 0xE2) return kAfterE2;
      if (b >= 0xE1 && b <= 0xEF) return kNeed2;
      if (b == 0xF0) return kAfterF0;
      if (b >= 0xF1 && b <= 0xF3) return kNeed3;
      if (b == 0xF4) return kAfterF4;
      return -1;
    case kNeed1:
      return b >= 0x80 && b <= 0xBF ? kBoundary : -1;
    case kNeed2:
      return b >= 0x80 && b <= 0xBF ? kNeed1 : -1;
    case kNeed3:
      return b >= 0x80 && b <= 0xBF ? kNeed2 : -1;
    case kAfterE0:
      return b >= 0xA0 && b <= 0xBF ? kNeed1 : -1;
    case kAfterED:
      return b >= 0x80 && b <= 0x9F ? kNeed1 : -1;
    case kAfterF0:
      return b >= 0x90 && b <= 0xBF ? kNeed2 : -1;
    case kAfterF4:
      return b >= 0x80 && b <= 0x8F ? kNeed2 : -1;
    case kAfterE2:
      return b == 0x80 ? kAfterE280 : b >= 0x81 && b <= 0xBF ? kNeed1 : -1;
    // U+2028 and U+2029 are not plain: ECMA-262's `.` excludes them, and with them out a
    // pattern's `.*` holds every plain string.
    case kAfterE280:
      return b >= 0x80 && b <= 0xBF && b != 0xA8 && b != 0xA9 ? kBoundary : -1;
  }
  return -1;
}

}  // namespace stencil
