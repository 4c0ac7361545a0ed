// The CSV reader (csv.h): numeric fields only, one element per row. Errors
// name the file, the line and the column.
#include <tarantella/data/csv.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/base/error.h>

namespace tnt::data {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::vector<std::string> split_fields(const std::string& line, char delimiter) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (;;) {
    const auto end = line.find(delimiter, start);
    fields.push_back(
        trim(line.substr(start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) return fields;
    start = end + 1;
  }
}

double parse_number(const std::string& field, const std::string& path, std::size_t line,
                    std::size_t column) {
  char* end = nullptr;
  errno = 0;
  const double value = field.empty() ? 0.0 : std::strtod(field.c_str(), &end);
  TNT_CHECK(!field.empty() && end == field.c_str() + field.size() && errno != ERANGE, "CSV file ",
            path, " line ", line, ", column ", column + 1, ": '", field,
            "' is not a number: every field must be numeric");
  return value;
}

// The table as read: column names (if any) and row-major values.
struct Table {
  std::vector<std::string> names;
  std::vector<double> values;
  std::size_t columns = 0;
  std::size_t rows = 0;
  std::vector<std::size_t> line_of_row;
};

Table read_table(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path);
  TNT_CHECK(in.good(), "CSV file ", path, " cannot be opened: ", std::strerror(errno),
            ": check the path");
  Table table;
  std::string line;
  std::size_t line_number = 0, first_data_line = 0;
  bool header_pending = options.header();
  while (std::getline(in, line)) {
    ++line_number;
    if (trim(line).empty()) continue;
    auto fields = split_fields(line, options.delimiter());
    if (header_pending) {
      table.names = std::move(fields);
      table.columns = table.names.size();
      header_pending = false;
      continue;
    }
    if (table.columns == 0) table.columns = fields.size();
    if (first_data_line == 0) first_data_line = line_number;
    TNT_CHECK(fields.size() == table.columns, "CSV file ", path, " line ", line_number, " has ",
              fields.size(), " fields but ",
              (table.names.empty() ? "line " : "the header on line "),
              (table.names.empty() ? first_data_line : 1), " has ", table.columns,
              ": every row needs the same number of columns");
    for (std::size_t c = 0; c < fields.size(); ++c) {
      table.values.push_back(parse_number(fields[c], path, line_number, c));
    }
    table.line_of_row.push_back(line_number);
    ++table.rows;
  }
  TNT_CHECK(table.rows > 0, "CSV file ", path, " has no data rows");
  return table;
}

std::optional<std::size_t> label_index(const Table& table, const CsvOptions& options,
                                       const std::string& path) {
  const auto& label = options.label_column();
  if (!label) return std::nullopt;
  const auto columns = static_cast<int>(table.columns);
  if (const int* index = std::get_if<int>(&*label)) {
    TNT_CHECK(*index >= -columns && *index < columns, "CSV file ", path, ": label column ", *index,
              " is out of range for ", columns, " columns: use 0..", columns - 1,
              " (or negative to count from the end)");
    TNT_CHECK(columns >= 2, "CSV file ", path,
              " has a single column: it cannot hold a label and features");
    return static_cast<std::size_t>(*index < 0 ? *index + columns : *index);
  }
  const auto& name = std::get<std::string>(*label);
  TNT_CHECK(
      !table.names.empty(), "CSV file ", path, ": label column '", name,
      "' is given by name but the file is read without a header: set CsvOptions().header(true)");
  for (std::size_t c = 0; c < table.names.size(); ++c) {
    if (table.names[c] == name) return c;
  }
  std::string known;
  for (const auto& n : table.names) known += (known.empty() ? "'" : ", '") + n + "'";
  TNT_CHECK(false, "CSV file ", path, " has no column '", name, "': its columns are ", known);
  return std::nullopt;
}

}  // namespace

Element read_csv(const std::string& path, const CsvOptions& options) {
  const Table table = read_table(path, options);
  const auto label = label_index(table, options, path);
  const auto rows = static_cast<std::int64_t>(table.rows);
  const auto all =
      torch::from_blob(const_cast<double*>(table.values.data()),
                       {rows, static_cast<std::int64_t>(table.columns)}, torch::kFloat64)
          .clone();  // own the values: the table goes away
  if (!label) return {all.to(options.feature_dtype())};

  const auto l = static_cast<std::int64_t>(*label);
  const torch::Tensor labels = all.select(1, l);
  if (c10::isIntegralType(options.label_dtype(), /*includeBool=*/true)) {
    const torch::Tensor column = labels.contiguous();
    const auto* v = column.data_ptr<double>();
    for (std::int64_t r = 0; r < rows; ++r) {
      TNT_CHECK(std::floor(v[r]) == v[r], "CSV file ", path, " line ",
                table.line_of_row[static_cast<std::size_t>(r)], ": label ", v[r],
                " is not a whole number: use CsvOptions().label_dtype(torch::kFloat32) for "
                "real-valued labels");
    }
  }
  const torch::Tensor features =
      torch::cat({all.narrow(1, 0, l), all.narrow(1, l + 1, all.size(1) - l - 1)}, 1);
  return {features.to(options.feature_dtype()), labels.to(options.label_dtype())};
}

}  // namespace tnt::data
