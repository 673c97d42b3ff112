//===- augment.h - Random crops, flips and resizes of uint8 images -*- C++ -*-===//
//
// The two standard training recipes, on uint8 HWC pixels before they are
// normalized:
//  - crop-flip (CIFAR): pad every side with `padding` zero pixels, take a
//    random crop of the original size, flip horizontally with probability
//    1/2 (torchvision's RandomCrop(size, padding) + RandomHorizontalFlip);
//  - rrc-flip (ImageNet): a random crop of 8%-100% of the area with an
//    aspect ratio in [3/4, 4/3] (log-uniform), resized to the output size,
//    flipped with probability 1/2 (RandomResizedCrop + flip); evaluation
//    resizes the shorter side to output / 0.875 and takes the center crop
//    (Resize(256) + CenterCrop(224) at 224), which is one resize of the
//    center box computed here.
// Resizing is separable and antialiased: bilinear when enlarging, a
// triangle filter as wide as the scale when shrinking (as PIL resizes), so a
// large photo shrunk to 224 does not alias.
//
// Randomness is keyed by (seed, epoch, example) alone (ExampleKey): an
// example draws the same crop whatever thread or rank prepares it, and a
// resumed run draws what an uninterrupted one would.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_DATA_AUGMENT_H
#define RN_RUNTIME_DATA_AUGMENT_H

#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rn {

enum class AugmentKind { none, cropFlip, resizedCropFlip };

/// "none", "crop-flip" or "rrc-flip"; else an error listing them.
Result<AugmentKind> parseAugmentKind(const std::string &name);
const char *augmentKindName(AugmentKind kind);

struct AugmentRecipe {
  AugmentKind kind = AugmentKind::none;
  int64_t padding = 4;                     ///< crop-flip: zero pixels on each side
  double minScale = 0.08, maxScale = 1.0;  ///< rrc-flip: crop area / image area
  double minRatio = 3.0 / 4.0, maxRatio = 4.0 / 3.0; ///< rrc-flip: width / height
  double evalCropFraction = 0.875;         ///< rrc-flip evaluation: 224 / 256
};

/// Who draws: the run's seed, the 0-based epoch and the example's index in
/// its split.
struct ExampleKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t example = 0;
};

/// A counter-based generator keyed by an ExampleKey (splitmix64 over the
/// key and a counter): a pure function of the key and the draw's position.
class ExampleRandom {
public:
  explicit ExampleRandom(const ExampleKey &key);
  uint64_t next();
  /// Uniform in [0, 1) from 53 bits.
  double uniform();
  /// Uniform in [lo, hi] (inclusive), lo <= hi.
  int64_t integer(int64_t lo, int64_t hi);

private:
  uint64_t state_;
};

/// A box of the source image (rows top..top+height, columns left..left+
/// width) and whether the output is mirrored. Boxes of a resize may have
/// fractional edges (the evaluation center crop); crops have integer ones.
struct CropBox {
  double top = 0, left = 0, height = 0, width = 0;
  bool flip = false;
};

/// crop-flip's draw for an image of `height` x `width`: the crop's top-left
/// corner in the padded image, in [0, 2 * padding], and the flip.
CropBox drawPaddedCrop(const ExampleKey &key, int64_t height, int64_t width, int64_t padding);

/// rrc-flip's draw (torchvision's RandomResizedCrop.get_params: ten tries
/// of a random area and log-uniform ratio, then the whole image clamped to
/// the ratio range, centered), and the flip.
CropBox drawResizedCrop(const ExampleKey &key, int64_t height, int64_t width,
                        const AugmentRecipe &recipe);

/// Evaluation's center box: the largest box of the output's aspect ratio
/// scaled by `fraction` of the shorter side (Resize(out / fraction) +
/// CenterCrop(out) as one resize).
CropBox centerBox(int64_t height, int64_t width, int64_t outHeight, int64_t outWidth,
                  double fraction);

/// Writes the `box.height` x `box.width` crop at (box.top - padding,
/// box.left - padding) of `in` (height x width x channels), zeros outside
/// the image, mirrored when box.flip, to `out` (box.height x box.width x
/// channels). The box's edges must be integers.
void cropWithPadding(const uint8_t *in, int64_t height, int64_t width, int64_t channels,
                     int64_t padding, const CropBox &box, uint8_t *out);

/// Resizes `box` of `in` (height x width x channels) to `outHeight` x
/// `outWidth` (antialiased separable filter, rounded to uint8), mirrored
/// when box.flip, into `out`.
void resizeBox(const uint8_t *in, int64_t height, int64_t width, int64_t channels,
               const CropBox &box, int64_t outHeight, int64_t outWidth, uint8_t *out);

} // namespace rn

#endif // RN_RUNTIME_DATA_AUGMENT_H
