#include "gpushare/wire/name_list.h"

namespace gpushare::wire {

namespace {

template <typename Names>
void append_all(NameList& list, const Names& names) {
  std::size_t bytes = 0;
  for (const auto& name : names) bytes += std::string_view(name).size();
  list.reserve(names.size(), bytes);
  for (const auto& name : names) list.push_back(name);
}

}  // namespace

NameList::NameList(std::initializer_list<std::string_view> names) {
  append_all(*this, names);
}

NameList::NameList(const std::vector<std::string>& names) {
  append_all(*this, names);
}

void NameList::reserve(std::size_t names, std::size_t bytes) {
  ends_.reserve(names);
  text_.reserve(bytes);
}

void NameList::clear() {
  text_.clear();
  ends_.clear();
}

std::vector<std::string> NameList::strings() const {
  return {begin(), end()};
}

}  // namespace gpushare::wire
