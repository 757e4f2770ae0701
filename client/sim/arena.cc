#include "client/sim/arena.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

namespace fieldbrain::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTouch = 1e-9;  // m; rounding slack for a circle pushed out to touch

// Entry distance of a ray into a box (slab method), or infinity when it misses or points away.
double RayBox(Vec2 o, Vec2 d, const Box& b) {
  double t0 = 0, t1 = kInf;
  const double lo[2] = {b.x0, b.y0}, hi[2] = {b.x1, b.y1}, oo[2] = {o.x, o.y}, dd[2] = {d.x, d.y};
  for (int axis = 0; axis < 2; ++axis) {
    if (std::abs(dd[axis]) < 1e-12) {
      if (oo[axis] < lo[axis] || oo[axis] > hi[axis]) return kInf;
      continue;
    }
    double ta = (lo[axis] - oo[axis]) / dd[axis], tb = (hi[axis] - oo[axis]) / dd[axis];
    if (ta > tb) std::swap(ta, tb);
    t0 = std::max(t0, ta);
    t1 = std::min(t1, tb);
    if (t0 > t1) return kInf;
  }
  return t0;
}

Vec2 ClosestOnBox(Vec2 p, const Box& b) {
  return {std::clamp(p.x, b.x0, b.x1), std::clamp(p.y, b.y0, b.y1)};
}

double DistanceToSegment(Vec2 p, Vec2 a, Vec2 b) {
  const Vec2 ab = b - a;
  const double len2 = Dot(ab, ab);
  const double t = len2 > 0 ? std::clamp(Dot(p - a, ab) / len2, 0.0, 1.0) : 0.0;
  return Length(p - (a + t * ab));
}

}  // namespace

double Length(Vec2 a) { return std::hypot(a.x, a.y); }
Vec2 Direction(double angle_rad) { return {std::cos(angle_rad), std::sin(angle_rad)}; }

ArenaConfig ArenaConfig::Default() {
  ArenaConfig c;
  c.boxes = {{1.8, 1.3, 2.2, 1.7}, {0.1, 2.6, 0.5, 2.9}, {3.5, 0.1, 3.9, 0.4}};
  c.track = Track{{1.3, 1.5}, {2.7, 1.5}, 0.9, 0.03};
  return c;
}

ArenaConfig ArenaConfig::Random(uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x6172656e61ull);  // "arena": not the world's own noise stream
  auto uniform = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  ArenaConfig c;
  c.width = uniform(3.0, 5.0);
  c.height = uniform(3.0, 5.0);
  const int boxes = std::uniform_int_distribution<int>(2, 5)(rng);
  for (int i = 0; i < boxes; ++i) {
    const double w = uniform(0.2, 0.6), h = uniform(0.2, 0.6);
    const double x0 = uniform(0.1, c.width - 0.1 - w), y0 = uniform(0.1, c.height - 0.1 - h);
    c.boxes.push_back({x0, y0, x0 + w, y0 + h});
  }
  const double radius = 0.3 * std::min(c.width, c.height);
  const double half = 0.2 * c.width;
  c.track = Track{{0.5 * c.width - half, 0.5 * c.height}, {0.5 * c.width + half, 0.5 * c.height}, radius, 0.03};
  return c;
}

double Arena::CastRay(Vec2 origin, double angle_rad, double max_range) const {
  const Vec2 d = Direction(angle_rad);
  double t = max_range;
  // Walls, seen from inside.
  if (d.x > 1e-12) t = std::min(t, (config_.width - origin.x) / d.x);
  if (d.x < -1e-12) t = std::min(t, -origin.x / d.x);
  if (d.y > 1e-12) t = std::min(t, (config_.height - origin.y) / d.y);
  if (d.y < -1e-12) t = std::min(t, -origin.y / d.y);
  for (const Box& b : config_.boxes) t = std::min(t, RayBox(origin, d, b));
  return std::max(t, 0.0);
}

bool Arena::OnLine(Vec2 p) const {
  const Track& k = config_.track;
  return std::abs(DistanceToSegment(p, k.a, k.b) - k.radius) <= 0.5 * k.width;
}

bool Arena::Overlaps(Vec2 c, double r) const {
  if (c.x < r || c.y < r || c.x > config_.width - r || c.y > config_.height - r) return true;
  for (const Box& b : config_.boxes) {
    if (Length(c - ClosestOnBox(c, b)) < r - kTouch) return true;
  }
  return false;
}

bool Arena::ResolveCollision(Vec2& c, double r) const {
  bool hit = false;
  for (const Box& b : config_.boxes) {
    const Vec2 q = ClosestOnBox(c, b);
    const Vec2 away = c - q;
    const double dist = Length(away);
    if (dist >= r - kTouch) continue;  // touching after an earlier push-out is no overlap
    hit = true;
    if (dist > 1e-9) {
      c = q + (r / dist) * away;
    } else {  // centre inside the box: leave through the nearest face
      const double dx0 = c.x - b.x0, dx1 = b.x1 - c.x, dy0 = c.y - b.y0, dy1 = b.y1 - c.y;
      const double m = std::min({dx0, dx1, dy0, dy1});
      if (m == dx0) c.x = b.x0 - r;
      else if (m == dx1) c.x = b.x1 + r;
      else if (m == dy0) c.y = b.y0 - r;
      else c.y = b.y1 + r;
    }
  }
  // Walls last, so a push out of a box never leaves the arena.
  const Vec2 before = c;
  c.x = std::clamp(c.x, r, config_.width - r);
  c.y = std::clamp(c.y, r, config_.height - r);
  return hit || c.x != before.x || c.y != before.y;
}

void Arena::TrackPose(double u, Vec2& point, double& heading_rad) const {
  const Track& k = config_.track;
  const double straight = Length(k.b - k.a);
  const double arc = std::numbers::pi * k.radius;
  double s = (u - std::floor(u)) * 2 * (straight + arc);
  // The segment a-b runs along +x in the default track; the stadium is traversed
  // counter-clockwise: south straight, east arc, north straight, west arc.
  const Vec2 axis = (1.0 / std::max(straight, 1e-12)) * (k.b - k.a);
  const Vec2 normal = {axis.y, -axis.x};  // points to the south side for axis = +x
  const double axis_angle = std::atan2(axis.y, axis.x);
  if (s < straight) {
    point = k.a + k.radius * normal + s * axis;
    heading_rad = axis_angle;
    return;
  }
  s -= straight;
  if (s < arc) {
    const double phi = axis_angle - std::numbers::pi / 2 + s / k.radius;
    point = k.b + k.radius * Direction(phi);
    heading_rad = phi + std::numbers::pi / 2;
    return;
  }
  s -= arc;
  if (s < straight) {
    point = k.b - k.radius * normal - s * axis;
    heading_rad = axis_angle + std::numbers::pi;
    return;
  }
  s -= straight;
  const double phi = axis_angle + std::numbers::pi / 2 + s / k.radius;
  point = k.a + k.radius * Direction(phi);
  heading_rad = phi + std::numbers::pi / 2;
}

}  // namespace fieldbrain::sim
