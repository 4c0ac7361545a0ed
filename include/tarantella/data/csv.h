// Reading numeric CSV files into tensors: Dataset::from_csv and read_csv.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include <tarantella/data/element.h>

namespace tnt::data {

/// How a CSV file is read. Every field must be a number; the separator is
/// `delimiter` (default ','), surrounding spaces are ignored, empty lines are
/// skipped. With a label column, an element is {features [C-1], label []};
/// without one it is {features [C]}.
///
/// Example:
///   auto ds = tnt::data::Dataset::from_csv(
///       "iris.csv", tnt::data::CsvOptions().header(true).label_column("species"));
class CsvOptions {
 public:
  /// Whether the first line holds column names (default false).
  CsvOptions& header(bool has_header) {
    header_ = has_header;
    return *this;
  }
  CsvOptions& delimiter(char c) {
    delimiter_ = c;
    return *this;
  }
  /// The label column by position (0-based; negative counts from the end).
  CsvOptions& label_column(int index) {
    label_ = index;
    return *this;
  }
  /// The label column by name (needs header(true)).
  CsvOptions& label_column(const std::string& name) {
    label_ = name;
    return *this;
  }
  CsvOptions& label_column(const char* name) { return label_column(std::string(name)); }
  /// dtype of the features (default float32).
  CsvOptions& feature_dtype(torch::Dtype dtype) {
    feature_dtype_ = dtype;
    return *this;
  }
  /// dtype of the label (default int64; integer labels must be whole numbers).
  CsvOptions& label_dtype(torch::Dtype dtype) {
    label_dtype_ = dtype;
    return *this;
  }

  bool header() const { return header_; }
  char delimiter() const { return delimiter_; }
  const std::optional<std::variant<int, std::string>>& label_column() const { return label_; }
  torch::Dtype feature_dtype() const { return feature_dtype_; }
  torch::Dtype label_dtype() const { return label_dtype_; }

 private:
  bool header_ = false;
  char delimiter_ = ',';
  std::optional<std::variant<int, std::string>> label_;
  torch::Dtype feature_dtype_ = torch::kFloat32;
  torch::Dtype label_dtype_ = torch::kInt64;
};

/// Reads a whole CSV file: {features [rows, C-1], labels [rows]} with a label
/// column, else {features [rows, C]}. Errors name the file, line and column.
///
/// Example:
///   tnt::data::Element table = tnt::data::read_csv("data.csv", tnt::data::CsvOptions());
Element read_csv(const std::string& path, const CsvOptions& options = CsvOptions());

}  // namespace tnt::data
