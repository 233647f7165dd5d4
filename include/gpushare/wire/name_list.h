#pragma once
// A list of node names kept in one buffer. A filter offers every node of the cluster by name
// (5 000 names of ~40 bytes), so the names take two allocations, whatever their number, instead
// of one each to decode them and one free each after the reply; each is read as a std::string_view,
// valid until the list is changed or destroyed.

#include <compare>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::wire {

class NameList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;

    const_iterator() = default;
    const_iterator(const NameList* list, std::size_t index) : list_(list), index_(index) {}
    std::string_view operator*() const { return (*list_)[index_]; }
    std::string_view operator[](difference_type n) const {
      return (*list_)[index_ + static_cast<std::size_t>(n)];
    }
    const_iterator& operator++() { return ++index_, *this; }
    const_iterator operator++(int) { return {list_, index_++}; }
    const_iterator& operator--() { return --index_, *this; }
    const_iterator operator--(int) { return {list_, index_--}; }
    const_iterator& operator+=(difference_type n) {
      index_ += static_cast<std::size_t>(n);
      return *this;
    }
    const_iterator& operator-=(difference_type n) { return *this += -n; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const_iterator a, const_iterator b) {
      return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
    }
    friend bool operator==(const_iterator a, const_iterator b) { return a.index_ == b.index_; }
    friend auto operator<=>(const_iterator a, const_iterator b) { return a.index_ <=> b.index_; }

   private:
    const NameList* list_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = const_iterator;
  using value_type = std::string_view;
  using size_type = std::size_t;

  NameList() = default;
  NameList(std::initializer_list<std::string_view> names);
  // From names held as strings (tests, the simulator): copies them.
  NameList(const std::vector<std::string>& names);  // NOLINT(google-explicit-constructor)

  // Room for `names` names of `bytes` bytes in all.
  void reserve(std::size_t names, std::size_t bytes);
  // Inline: called once per name, 10 000 times in a 5 000-name filter.
  void push_back(std::string_view name) {
    text_.append(name);
    ends_.push_back(text_.size());
  }
  void clear();

  std::size_t size() const { return ends_.size(); }
  // The names' bytes in all.
  std::size_t text_size() const { return text_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(begin, ends_[i] - begin);
  }
  std::string_view front() const { return (*this)[0]; }
  std::string_view back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // The names as strings (copies).
  std::vector<std::string> strings() const;

  friend bool operator==(const NameList& a, const NameList& b) {
    return a.ends_ == b.ends_ && a.text_ == b.text_;
  }

 private:
  std::string text_;               // the names, back to back
  std::vector<std::size_t> ends_;  // name i is text_[ends_[i - 1], ends_[i]) (from 0 for i = 0)
};

}  // namespace gpushare::wire
