#include "tools/sprintrt/demo_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

namespace sprintrt::cli {

namespace {

constexpr const char* font = "font-family=\"sans-serif\"";
constexpr const char* forward_colour = "#4c78a8";
constexpr const char* train_colour = "#f58518";
constexpr const char* worker_colour = "#54a24b";

/// A number for an attribute or a label, e.g. "12.5".
std::string num(double x, int decimals = 1) {
  char buf[32];
  if (x == 0)
    x = 0; // not "-0"
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, x);
  return buf;
}

/// A step of 1, 2 or 5 times a power of ten that cuts [0, range] into about
/// `count` intervals: axis ticks at round numbers.
double nice_step(double range, int count) {
  if (!(range > 0))
    return 1;
  double raw = range / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

/// Decimals enough to tell ticks `step` apart.
int decimals_for(double step) {
  return step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
}

std::string svg_open(int width, int height) {
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  return out.str();
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 int size = 12, const char* extra = "") {
  std::ostringstream out;
  out << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" " << font << " font-size=\"" << size
      << "\" text-anchor=\"" << anchor << "\"" << extra << ">" << s << "</text>\n";
  return out.str();
}

std::string line(double x1, double y1, double x2, double y2, const char* colour) {
  std::ostringstream out;
  out << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\""
      << num(y2) << "\" stroke=\"" << colour << "\"/>\n";
  return out.str();
}

std::string rect(double x, double y, double w, double h, const char* colour) {
  std::ostringstream out;
  out << "<rect x=\"" << num(x, 2) << "\" y=\"" << num(y) << "\" width=\"" << num(w, 2)
      << "\" height=\"" << num(h) << "\" fill=\"" << colour << "\"/>\n";
  return out.str();
}

/// One panel of the learning curves: `value(e)` over the epochs, in the box
/// at (x0, y0) of size w x h, y from 0 to a round number above the maximum.
std::string curve_panel(const std::vector<demo_epoch_figures>& epochs,
                        const std::function<double(const demo_epoch_figures&)>& value,
                        const std::string& title, double scale, double x0, double y0, double w,
                        double h, const char* colour) {
  std::ostringstream out;
  double top = 0;
  for (const auto& e : epochs)
    if (std::isfinite(value(e)))
      top = std::max(top, scale * value(e));
  double y_step = nice_step(top, 5);
  double y_max = std::max(y_step, std::ceil(top / y_step - 1e-9) * y_step);
  double first = static_cast<double>(epochs.front().epoch);
  double last = std::max(first + 1, static_cast<double>(epochs.back().epoch));
  auto px = [&](double epoch) { return x0 + (epoch - first) / (last - first) * w; };
  auto py = [&](double v) { return y0 + h - v / y_max * h; };
  out << text(x0 + w / 2, y0 - 12, title, "middle", 14);
  for (double v = 0; v <= y_max + 1e-9 * y_max; v += y_step) {
    out << line(x0, py(v), x0 + w, py(v), "#e5e5e5");
    out << text(x0 - 6, py(v) + 4, num(v, decimals_for(y_step)), "end", 11);
  }
  // Ticks at the first epoch and at multiples of a round step.
  double x_step = std::max(1.0, nice_step(last - first, 6));
  std::vector<double> ticks{first};
  for (double e = std::ceil(first / x_step) * x_step; e <= last + 1e-9; e += x_step)
    if (e - first >= 0.5 * x_step)
      ticks.push_back(e);
  for (double e : ticks) {
    out << line(px(e), y0 + h, px(e), y0 + h + 4, "#333");
    out << text(px(e), y0 + h + 17, num(e, 0), "middle", 11);
  }
  out << text(x0 + w / 2, y0 + h + 34, "epoch", "middle", 12);
  out << line(x0, y0, x0, y0 + h, "#333") << line(x0, y0 + h, x0 + w, y0 + h, "#333");
  out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
  for (const auto& e : epochs)
    if (std::isfinite(value(e)))
      out << num(px(static_cast<double>(e.epoch))) << ',' << num(py(scale * value(e))) << ' ';
  out << "\"/>\n";
  for (const auto& e : epochs)
    if (std::isfinite(value(e)))
      out << "<circle cx=\"" << num(px(static_cast<double>(e.epoch))) << "\" cy=\""
          << num(py(scale * value(e))) << "\" r=\"2.5\" fill=\"" << colour << "\"/>\n";
  return out.str();
}

caf::error write_file(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream out{path, std::ios::binary};
  out << contents;
  out.close();
  if (!out)
    return make_error(errc::io_error, "cannot write " + path.string());
  return {};
}

} // namespace

std::string learning_curves_svg(const std::vector<demo_epoch_figures>& epochs) {
  constexpr int width = 760;
  constexpr int height = 300;
  std::string out = svg_open(width, height);
  if (epochs.empty())
    return out + "</svg>\n";
  out += curve_panel(
      epochs, [](const auto& e) { return e.loss_per_frame; }, "loss per frame (training)", 1.0, 60,
      40, 290, 200, forward_colour);
  out += curve_panel(
      epochs, [](const auto& e) { return e.label_error_rate; }, "label error rate, % (held-out)",
      100.0, 440, 40, 290, 200, train_colour);
  return out + "</svg>\n";
}

namespace {

constexpr double timeline_left = 80; // lane labels
constexpr double timeline_width = 860;
constexpr double lane_height = 22;
constexpr double lane_gap = 8;

/// The lanes of `timeline` between `from_ns` and `to_ns`, from height `top`
/// down, with a time axis in milliseconds since the epoch started; `height`
/// gets the panel's height.
std::string timeline_panel(const demo_timeline& timeline, int64_t from_ns, int64_t to_ns,
                           double top, const std::string& title, double& height) {
  double lanes = static_cast<double>(timeline.lanes + 1);
  double lanes_top = top + 22;
  double axis_y = lanes_top + lanes * (lane_height + lane_gap);
  height = axis_y + 40 - top;
  double span = static_cast<double>(std::max<int64_t>(to_ns - from_ns, 1));
  auto px = [&](int64_t ns) {
    double x = static_cast<double>(ns - from_ns) / span;
    return timeline_left + std::clamp(x, 0.0, 1.0) * timeline_width;
  };
  auto lane_y = [&](size_t lane) {
    return lanes_top + static_cast<double>(lane) * (lane_height + lane_gap);
  };
  // Draws [start, end) in a lane if any of it is in view.
  auto bar = [&](int64_t start, int64_t end, size_t lane, const char* colour) {
    if (end <= from_ns || start >= to_ns)
      return std::string{};
    return rect(px(start), lane_y(lane), std::max(0.5, px(end) - px(start)), lane_height, colour);
  };
  std::string out = text(timeline_left, top + 12, title, "start", 13);
  out += text(timeline_left - 8, lane_y(0) + 15, "trainer", "end");
  for (size_t lane = 0; lane < timeline.lanes; ++lane)
    out += text(timeline_left - 8, lane_y(lane + 1) + 15, "worker " + std::to_string(lane), "end");
  for (size_t lane = 0; lane <= timeline.lanes; ++lane)
    out += rect(timeline_left, lane_y(lane), timeline_width, lane_height, "#f2f2f2");
  for (const auto& i : timeline.trainer)
    out += bar(i.start_ns, i.end_ns, 0,
               i.activity == trainer_activity::forward ? forward_colour : train_colour);
  for (const auto& i : timeline.workers)
    if (i.lane < timeline.lanes)
      out += bar(i.start_ns, i.end_ns, i.lane + 1, worker_colour);
  double from_ms = static_cast<double>(from_ns) / 1e6;
  double span_ms = span / 1e6;
  double step = nice_step(span_ms, 8);
  out += line(timeline_left, axis_y, timeline_left + timeline_width, axis_y, "#333");
  for (double ms = std::ceil(from_ms / step - 1e-9) * step; ms <= from_ms + span_ms + 1e-9;
       ms += step) {
    double x = timeline_left + (ms - from_ms) / span_ms * timeline_width;
    out += line(x, axis_y, x, axis_y + 4, "#333");
    out += text(x, axis_y + 17, num(ms, decimals_for(step)), "middle", 11);
  }
  out += text(timeline_left + timeline_width / 2, axis_y + 33,
              "milliseconds since the epoch started", "middle", 11);
  return out;
}

} // namespace

std::string timeline_svg(const demo_timeline& timeline) {
  // Busy fractions for the title, as the picture shows them.
  double trainer_ns = 0;
  for (const auto& i : timeline.trainer)
    trainer_ns += static_cast<double>(i.end_ns - i.start_ns);
  double worker_ns = 0;
  for (const auto& i : timeline.workers)
    worker_ns += static_cast<double>(i.end_ns - i.start_ns);
  double total_ns = static_cast<double>(std::max<int64_t>(timeline.elapsed_ns, 1));
  std::string body =
      text(timeline_left, 20,
           "epoch " + std::to_string(timeline.epoch) + ": trainer busy " +
               num(100 * trainer_ns / total_ns, 0) + "%, workers busy " +
               num(100 * worker_ns / (total_ns * std::max<size_t>(timeline.lanes, 1)), 0) +
               "% of " + num(total_ns / 1e6, 0) + " ms",
           "start", 15);
  double legend_x = timeline_left;
  for (auto [colour, label] : {std::pair{forward_colour, "trainer: model run to forward"},
                               std::pair{train_colour, "trainer: model run, backprop, update"},
                               std::pair{worker_colour, "worker: Sprint loss of one sequence"}}) {
    body += rect(legend_x, 32, 10, 10, colour);
    body += text(legend_x + 14, 41, label, "start", 11);
    legend_x += 14 + 6.2 * static_cast<double>(std::string{label}.size()) + 20;
  }
  double y = 56;
  double height = 0;
  body += timeline_panel(timeline, 0, timeline.elapsed_ns, y, "the whole epoch", height);
  y += height + 8;
  // A close-up of four batches in the middle of the epoch, where single
  // computations and the overlap are visible.
  std::vector<int64_t> train_starts;
  for (const auto& i : timeline.trainer)
    if (i.activity == trainer_activity::train)
      train_starts.push_back(i.start_ns);
  if (train_starts.size() >= 6) {
    size_t first = train_starts.size() / 2 - 2;
    body += timeline_panel(timeline, train_starts[first], train_starts[first + 4], y,
                           "close-up: four batches in the middle", height);
    y += height + 8;
  }
  auto width = static_cast<int>(timeline_left + timeline_width + 20);
  return svg_open(width, static_cast<int>(y)) + body + "</svg>\n";
}

caf::error write_demo_report(const std::string& dir, const std::string& json,
                             const std::vector<demo_epoch_figures>& epochs,
                             const demo_timeline& timeline) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create directory " + dir + ": " + ec.message());
  if (auto err = write_file(fs::path{dir} / "report.json", json))
    return err;
  if (auto err = write_file(fs::path{dir} / "learning_curves.svg", learning_curves_svg(epochs)))
    return err;
  return write_file(fs::path{dir} / "timeline.svg", timeline_svg(timeline));
}

} // namespace sprintrt::cli
