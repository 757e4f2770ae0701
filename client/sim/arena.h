// The simulated PiCar-X's world: a walled rectangle with box obstacles and a closed line painted on
// the floor. Pure geometry, metres and radians, x east, y north, origin at the south-west corner.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace fieldbrain::sim {

struct Vec2 {
  double x = 0, y = 0;
};
inline Vec2 operator+(Vec2 a, Vec2 b) { return {a.x + b.x, a.y + b.y}; }
inline Vec2 operator-(Vec2 a, Vec2 b) { return {a.x - b.x, a.y - b.y}; }
inline Vec2 operator*(double s, Vec2 a) { return {s * a.x, s * a.y}; }
inline double Dot(Vec2 a, Vec2 b) { return a.x * b.x + a.y * b.y; }
double Length(Vec2 a);
Vec2 Direction(double angle_rad);  // unit vector

struct Box {  // axis-aligned obstacle
  double x0, y0, x1, y1;
};

// The floor line: a stadium (all points at `radius` from the segment a-b), `width` wide.
struct Track {
  Vec2 a, b;
  double radius = 0;
  double width = 0;
};

struct ArenaConfig {
  double width = 4.0;   // m, walls at x = 0 and x = width
  double height = 3.0;  // m, walls at y = 0 and y = height
  std::vector<Box> boxes;
  Track track;
  // 4 m x 3 m; a 1.4 m x 1.8 m stadium track 3 cm wide around a box in the middle; two boxes in
  // corners off the track.
  static ArenaConfig Default();
  // A room drawn from `seed`, so a brain is never judged on the one arena it was tuned in: 3-5 m
  // on each side, 2-5 boxes of 0.2-0.6 m anywhere at least 0.1 m from the walls (they may overlap
  // each other or the track), and a stadium track scaled to the room.
  static ArenaConfig Random(uint64_t seed);
};

class Arena {
 public:
  explicit Arena(ArenaConfig config) : config_(std::move(config)) {}

  const ArenaConfig& config() const { return config_; }

  // Distance from `origin` (inside the arena) along `angle` to the first wall or box, or
  // `max_range` when nothing is nearer.
  double CastRay(Vec2 origin, double angle_rad, double max_range) const;

  // Whether the floor at `p` is painted.
  bool OnLine(Vec2 p) const;

  // Pushes a circle out of every wall and box it overlaps; true when it overlapped any.
  bool ResolveCollision(Vec2& center, double radius) const;

  // Whether a circle overlaps a wall or a box.
  bool Overlaps(Vec2 center, double radius) const;

  // A point on the track centre line at arc fraction `u` in [0, 1), counter-clockwise from the
  // start of the south straight, and the direction of travel there.
  void TrackPose(double u, Vec2& point, double& heading_rad) const;

 private:
  ArenaConfig config_;
};

}  // namespace fieldbrain::sim
