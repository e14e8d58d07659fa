// The kinds of completion checks (GrammarBuilder::add_check): predicates run when an item of a
// rule completes (or, for next_key / next_item, when it is predicted), vetoing what no
// context-free grammar expresses: JSON Schema's uniqueItems, duplicate keys, required keys in any
// order.
#pragma once
#include <cstdint>

namespace stencil {

// The one list of check kinds: X(enumerator, serialized value, name in Python and in messages).
// The builder, the serializer, the bindings (stencil.CheckKind) and the grammar view read it.
#define STENCIL_CHECK_KINDS(X)                                                                      \
  /* the completed array item equals no earlier item of its list */                                 \
  X(UniqueItem, 1, unique_item)                                                                     \
  /* the completed member's key equals no earlier member's key */                                   \
  X(UniqueKey, 2, unique_key)                                                                       \
  /* the completed object has all `names` and min..max members */                                   \
  X(ObjectKeys, 3, object_keys)                                                                     \
  /* the completed JSON string (decoded) is none of `names` */                                      \
  X(NotIn, 4, not_in)                                                                               \
  /* the completed separator may be followed by one more member: the members before it leave */     \
  /* room within max for it and for the missing `names` */                                          \
  X(MoreMembers, 5, more_members)                                                                   \
  /* on an empty rule before a member's key, run when it is predicted: `key` (or, without one, a */ \
  /* key outside `names`) is new among the members before it and leaves room within max for the */  \
  /* missing `names` */                                                                             \
  X(NextKey, 6, next_key)                                                                           \
  /* on an empty rule before an array item whose value is known (`key`, JSON text), run when it */  \
  /* is predicted: no earlier item equals it */                                                     \
  X(NextItem, 7, next_item)

enum class CheckKind : uint8_t {
#define STENCIL_CHECK_ENUMERATOR(kind, value, name) kind = value,
  STENCIL_CHECK_KINDS(STENCIL_CHECK_ENUMERATOR)
#undef STENCIL_CHECK_ENUMERATOR
};

// The kind's name ("unique_item"), or null for a value that is no kind.
inline const char* check_kind_name(CheckKind k) {
  switch (k) {
#define STENCIL_CHECK_NAME(kind, value, name) \
  case CheckKind::kind:                       \
    return #name;
    STENCIL_CHECK_KINDS(STENCIL_CHECK_NAME)
#undef STENCIL_CHECK_NAME
  }
  return nullptr;
}
// Whether `value` (a serialized byte) is a check kind.
inline bool is_check_kind(uint8_t value) { return check_kind_name(static_cast<CheckKind>(value)) != nullptr; }

}  // namespace stencil
