package golden

// TorchArch is a network of testdata/golden/archs: its folder, its class
// in archs.py, its input channels and the README's Grad-CAM layer.
type TorchArch struct {
	Name, Class string
	Cin         int
	Layer       string
}

// TorchArchs are the six networks of testdata/golden/archs, in the
// README's order.
var TorchArchs = []TorchArch{
	{"fcn", "FCN", 1, "conv3"},
	{"resnet1d", "ResNet1D", 1, "block3"},
	{"inceptiontime", "InceptionTime", 1, "inc3"},
	{"stridednet", "StridedNet", 1, "conv3"},
	{"resnet1d-3ph", "ResNet1D", 3, "block3"},
	{"lstm", "LSTMNet", 1, "lstm"},
}
